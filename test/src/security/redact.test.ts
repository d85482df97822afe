import { describe, expect, it } from "vitest";
import {
  redactProxyLine,
  redactProxyUrl,
  redactSecrets,
  redactSourceKey,
  redactSourceUrl,
  redactUnparsed,
} from "../../../src/security/redact.js";

describe("redactSecrets (free text)", () => {
  it.each([
    ["http://alice:s3cret@10.0.0.1:3128", "http://alice:***@10.0.0.1:3128"],
    ["socks5://bob:p%40ss@proxy.example:1080", "socks5://bob:***@proxy.example:1080"],
    ["https://:tokenonly@h:1", "https://:***@h:1"],
    ["carol:pw@10.0.0.2:8080", "carol:***@10.0.0.2:8080"],
    ["bad url http://u:p@h:99999 and http://v:q@k:1 twice", "bad url http://u:***@h:99999 and http://v:***@k:1 twice"],
    ['proxy "http://dave:x:y@h:1" refused', 'proxy "http://dave:***@h:1" refused'],
    // a password as typed: quotes, parentheses, slashes and at signs up to the last @ of the word
    ["http://cust-s00001:TPLPW'SECRET(x)@gw:7777", "http://cust-s00001:***@gw:7777"],
    ['http://u:a/b"c(d)@e@h:1', "http://u:***@h:1"],
    ["redis://:hunter2@10.0.0.9:6379/0", "redis://:***@10.0.0.9:6379/0"],
    ["http://a@b:pw@h:1", "http://a@b:***@h:1"],
  ])("%s", (input, expected) => {
    expect(redactSecrets(input)).toBe(expected);
  });

  it("reads hostile text once: a word of 90,000 characters, colons and = signs without end, is redacted whole", () => {
    // the old pattern tried every "=" as a start and scanned the rest of the word from each
    const word = "=a:".repeat(30_000);
    expect(redactSecrets(word)).toBe(word);
    expect(redactSecrets(`${word}@h`)).toBe("=a:***@h");
  });

  it("leaves URLs without a password alone", () => {
    for (const s of ["http://10.0.0.1:3128", "http://user@h:1", "10.0.0.1:3128", "https://example.com/a:b@c"])
      expect(redactSecrets(s)).toBe(s);
  });
});

describe("redactProxyUrl (from the parsed URL)", () => {
  it.each([
    ["http://alice:s3cret@10.0.0.1:3128", "http://alice:***@10.0.0.1:3128"],
    ["http://cust-s00001:TPLPW'SECRET(x)@gw.example:7777", "http://cust-s00001:***@gw.example:7777"],
    ["http://u:p@ss@h:1", "http://u:***@h:1"],
    ["https://u:x@h:443", "https://u:***@h:443"],
    ["http://h:80", "http://h:80"],
    ["10.0.0.1:3128", "10.0.0.1:3128"],
    ["u:pw@h:1", "u:***@h:1"],
    ["http://u@h:1", "http://u@h:1"],
    ["http://[::1]:8080", "http://[::1]:8080"],
    // the path, query or fragment may hold the rest of a password: nothing past the first ":"
    ["http://u:PWA/PWZ@h:1", "http://u…"],
    ["http://u:12/PWZ@h:1", "http://u…"],
    ["http://u:12#PWZ@h:1", "http://u…"],
    ["http://u:12?PWZ@h:1", "http://u…"],
    ["http://u:a b@h:1", "http://u…"],
  ])("%s", (input, expected) => {
    expect(redactProxyUrl(input)).toBe(expected);
  });

  it("is its own fixed point", () => {
    for (const s of ["http://u:***@h:1", "socks5://u:***@h:1080", "10.0.0.1:1"]) expect(redactProxyUrl(s)).toBe(s);
  });
});

describe("redactUnparsed and redactProxyLine", () => {
  it("an entry that does not parse shows its scheme and what comes before its first ':'", () => {
    expect(redactUnparsed("http://user:pw/x@h:1")).toBe("http://user…");
    expect(redactUnparsed("not-a-proxy")).toBe("not-a-proxy");
    expect(redactUnparsed(`http://${"u".repeat(300)}:pw@h:1`)).toBe(`http://${"u".repeat(100)}…`);
  });

  it("a line whose later words hold an @ shows its url only up to where a password could start", () => {
    expect(redactProxyLine("http://u:pw@h:1 tier=dc")).toBe("http://u:***@h:1");
    expect(redactProxyLine("http://u:12 34@h:1")).toBe("http://u…");
    expect(redactProxyLine("http://u:a@b c@h:1")).toBe("http://u…");
  });
});

describe("redactSourceUrl", () => {
  it("shows scheme, host, port and plain path words; no userinfo, no query values, no fragment", () => {
    const url = "http://APIKEY-IN-USER-777:pw@list.example:8080/download/PATHTOKEN-999/socks5.txt?key=abc&format=txt&TOKEN1#FRAG-SECRET";
    expect(redactSourceUrl(url)).toBe("http://list.example:8080/download/***/socks5.txt?key=***&format=***&***=***");
    expect(redactSourceUrl("https://raw.example.com/lists/a3f9c2d1e0/http.txt")).toBe("https://raw.example.com/lists/***/http.txt");
    expect(redactSourceUrl("http://127.0.0.1:5/list")).toBe("http://127.0.0.1:5/list");
    expect(redactSourceUrl("not a url")).toBe("***");
  });

  it("is its own fixed point; a source's id is shown as it is", () => {
    const shown = redactSourceUrl("http://h/x/Tok3n/y?k=v");
    expect(redactSourceUrl(shown)).toBe(shown);
    expect(redactSourceKey("0123456789ab")).toBe("0123456789ab");
    expect(redactSourceKey("http://u:p@h/SECRET")).toBe("http://h/***");
  });
});
