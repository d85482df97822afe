import { describe, expect, it } from "vitest";
import { MIN_TOKEN_LENGTH, TokenTable, TokensFileError } from "../../../src/security/tokens.js";

const W = "w".repeat(MIN_TOKEN_LENGTH);
const A = "a".repeat(MIN_TOKEN_LENGTH + 8);

describe("TokenTable", () => {
  it("reads <token> <role> [<name>] lines, skipping blanks and comments", () => {
    const t = TokenTable.parse(`# fleet tokens\n\n${W} worker crawler-eu\n  ${A}\tadmin\n`);
    expect(t.size).toBe(2);
    expect(t.lookup(W)).toEqual({ role: "worker", name: "crawler-eu" });
    expect(t.lookup(A)).toEqual({ role: "admin", name: undefined });
  });

  it("finds nothing for an unknown token, a prefix or a longer string of a known one", () => {
    const t = TokenTable.parse(`${W} worker`);
    expect(t.lookup("")).toBeUndefined();
    expect(t.lookup(W.slice(1))).toBeUndefined();
    expect(t.lookup(`${W}x`)).toBeUndefined();
    expect(t.lookup(W.toUpperCase())).toBeUndefined();
  });

  it.each([
    [`${W}`, /line 1: expected "<token> <role> \[<name>\]"/],
    [`${W} worker name extra`, /line 1: expected/],
    [`short worker`, new RegExp(`at least ${MIN_TOKEN_LENGTH} printable`)],
    [`${W} root`, /role must be worker or admin, got "root"/],
    [`${W} worker bad/name`, /a name must match/],
    [`${W} worker\n${W} admin`, /line 2: the same token appears twice/],
    [`# only a comment\n`, /has no token/],
  ])("refuses %j", (text, message) => {
    expect(() => TokenTable.parse(text)).toThrow(TokensFileError);
    expect(() => TokenTable.parse(text)).toThrow(message);
  });

  it("never keeps the token itself", () => {
    const t = TokenTable.parse(`${A} admin`);
    expect(JSON.stringify(t)).not.toContain(A);
  });
});
