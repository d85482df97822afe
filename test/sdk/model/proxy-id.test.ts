import { describe, expect, it } from "vitest";
import { InvalidInputError, endpointOf, parseProxySpec, storedIdOf, usernameOf } from "@proxybroker/sdk/model";

const idOf = (url: string): string => parseProxySpec({ url, tier: "", labels: {} }).id;

describe("proxy ids (§11 identity)", () => {
  it("is host:port without username, username@host:port with one, never the password", () => {
    expect(idOf("10.0.0.1:3128")).toBe("10.0.0.1:3128");
    expect(idOf("http://:pw@10.0.0.1:3128")).toBe("10.0.0.1:3128");
    expect(idOf("http://cust-s1-country-us:secret@GW.example:7777")).toBe("cust-s1-country-us@gw.example:7777");
    expect(idOf("socks5://u_1.x~y:secret@[::1]:1080")).toBe("u_1.x~y@[::1]:1080");
    for (const url of ["http://u:secret@h.example:1", "http://u:secret@h.example:1"]) expect(idOf(url)).not.toContain("secret");
  });

  it("writes the username in one canonical percent-encoding, whatever the spelling", () => {
    expect(idOf("http://us%65r:pw@h.example:1")).toBe("user@h.example:1");
    expect(idOf("http://john%40example.com:pw@h.example:1")).toBe("john%40example.com@h.example:1");
    expect(idOf("http://a%3Bb%3dc%2Fd%3Ae:pw@h.example:1")).toBe("a%3Bb%3Dc%2Fd%3Ae@h.example:1");
    expect(idOf("http://a b:pw@h.example:1")).toBe("a%20b@h.example:1");
    expect(idOf("http://m%C3%BCller:pw@h.example:1")).toBe("m%C3%BCller@h.example:1");
    expect(idOf("http://müller:pw@h.example:1")).toBe("m%C3%BCller@h.example:1");
    expect(idOf("http://a+b!:pw@h.example:1")).toBe("a%2Bb%21@h.example:1");
    // nothing that separates stored fields, lease ids or CLI columns
    for (const url of ["http://a%09b%0Ac%1Fd;e=f:pw@h.example:1", "http://a%00:pw@h.example:1"]) {
      const id = idOf(url);
      expect(usernameOf(id)).toMatch(/^[A-Za-z0-9._~%-]+$/);
      expect(endpointOf(id)).toBe("h.example:1");
    }
  });

  it("keeps the URL as written, with its password", () => {
    expect(parseProxySpec({ url: "http://us%65r:p%40ss@h.example:1", tier: "", labels: {} }).url).toBe("http://us%65r:p%40ss@h.example:1");
  });

  it("refuses a username it cannot represent, clearly", () => {
    expect(() => idOf("http://a%ZZ%FF:pw@h.example:1")).toThrow(InvalidInputError);
    expect(() => idOf("http://a%FF:pw@h.example:1")).toThrow(/username is not valid percent-encoded UTF-8/);
    expect(() => idOf(`http://${"u".repeat(290)}:pw@h.example:1`)).toThrow(/username too long/);
  });

  it("finds the legacy record of a username only when its URL names that username", () => {
    const stored = new Map([["h.example:1", { url: "http://us%65r:pw@h.example:1" }]]);
    const at = (id: string) => stored.get(id);
    expect(storedIdOf("user@h.example:1", at)).toBe("h.example:1");
    expect(storedIdOf("other@h.example:1", at)).toBe("other@h.example:1");
    expect(storedIdOf("h.example:1", at)).toBe("h.example:1");
    expect(storedIdOf("user@h.example:2", at)).toBe("user@h.example:2");
  });
});
