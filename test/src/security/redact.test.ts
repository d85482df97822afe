import { describe, expect, it } from "vitest";
import { redactSecrets } from "../../../src/security/redact.js";

describe("redactSecrets", () => {
  it.each([
    ["http://alice:s3cret@10.0.0.1:3128", "http://alice:***@10.0.0.1:3128"],
    ["socks5://bob:p%40ss@proxy.example:1080", "socks5://bob:***@proxy.example:1080"],
    ["https://:tokenonly@h:1", "https://:***@h:1"],
    ["carol:pw@10.0.0.2:8080", "carol:***@10.0.0.2:8080"],
    ["bad url http://u:p@h:99999 and http://v:q@k:1 twice", "bad url http://u:***@h:99999 and http://v:***@k:1 twice"],
    ['proxy "http://dave:x:y@h:1" refused', 'proxy "http://dave:***@h:1" refused'],
  ])("%s", (input, expected) => {
    expect(redactSecrets(input)).toBe(expected);
  });

  it("leaves URLs without a password alone", () => {
    for (const s of ["http://10.0.0.1:3128", "http://user@h:1", "10.0.0.1:3128", "https://example.com/a:b@c"])
      expect(redactSecrets(s)).toBe(s);
  });
});
