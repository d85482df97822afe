/**
 * The exit book of the in-memory engine (sdk/src/engine/memory/exits.ts, G9): pure state, no store.
 */
import { describe, expect, it } from "vitest";
import { ExitBook, FORMER_EXIT_MS, hostOf } from "../../../../sdk/src/engine/memory/exits.js";

const T0 = 1_700_000_000_000;

describe("hostOf", () => {
  it("takes the part after the last @, before the port", () => {
    expect(hostOf("10.0.0.1:3128")).toBe("10.0.0.1");
    expect(hostOf("user@gw.example:7000")).toBe("gw.example");
    expect(hostOf("us@er@gw.example:7000")).toBe("gw.example");
    expect(hostOf("[2001:db8::1]:8080")).toBe("[2001:db8::1]");
    expect(hostOf("u@[::1]:8080")).toBe("[::1]");
    expect(hostOf("[::1]")).toBe("[::1]");
    expect(hostOf("gw.example")).toBe("gw.example");
  });
});

describe("ExitBook", () => {
  it("marks both proxies of a host when the second is added, and clears the last one left", () => {
    const book = new ExitBook();
    book.add("gw:1");
    expect(book.of("gw:1")?.sharesHost).toBe(false);
    expect(book.anyAwaiting).toBe(false);
    book.add("gw:2");
    book.add("gw:3");
    expect(["gw:1", "gw:2", "gw:3"].map((id) => book.awaitsProbe(id))).toEqual([true, true, true]);
    book.remove("gw:3", T0);
    expect(book.of("gw:1")?.sharesHost).toBe(true);
    book.remove("gw:2", T0);
    expect(book.of("gw:1")?.sharesHost).toBe(false);
    expect(book.anyAwaiting).toBe(false);
  });

  it("a probe or a known exit ends the wait for a probe", () => {
    const book = new ExitBook();
    book.add("a@gw:1");
    book.add("b@gw:1");
    book.probed("a@gw:1");
    expect(book.awaitsProbe("a@gw:1")).toBe(false);
    expect(book.anyAwaiting).toBe(true);
    book.showed("b@gw:1", "198.51.100.1", T0);
    expect(book.awaitsProbe("b@gw:1")).toBe(false);
    expect(book.anyAwaiting).toBe(false);
  });

  it("records the first exit without a former one, and a change with the old exit for an hour", () => {
    const book = new ExitBook();
    for (const id of ["a", "b", "c"]) book.add(id);
    expect(book.showed("a", "", T0)).toBeUndefined();
    expect(book.showed("a", "x", T0)).toEqual({ proxyId: "a", from: "", to: "x" });
    expect(book.showed("a", "x", T0)).toBeUndefined();
    book.showed("b", "x", T0);
    book.showed("c", "y", T0);
    expect(book.anyShared).toBe(true);
    expect(book.siblingsOf("a", T0)).toEqual(["b"]);
    expect(book.siblingsOf("c", T0)).toEqual([]);
    expect(book.showed("a", "y", T0)).toEqual({ proxyId: "a", from: "x", to: "y" });
    expect(book.of("a")).toMatchObject({ exitIp: "y", formerExit: "x", formerUntil: T0 + FORMER_EXIT_MS });
    expect(book.siblingsOf("a", T0).sort()).toEqual(["b", "c"]);
    expect(book.siblingsOf("b", T0)).toEqual(["a"]);
    expect([book.exitKey("a", T0), book.exitKey("c", T0), book.exitKey("b", T0)]).toEqual(["y\nx", "y", "x"]);
    const later = T0 + FORMER_EXIT_MS;
    expect(book.exitKey("a", later)).toBe("y");
    expect(book.siblingsOf("a", later)).toEqual(["c"]);
    expect(book.siblingsOf("b", later)).toEqual([]);
  });

  it("a removed proxy stays a member of its exit for a former exit's time", () => {
    const book = new ExitBook();
    book.add("a");
    book.add("b");
    book.showed("a", "x", T0);
    book.showed("b", "x", T0);
    book.remove("a", T0);
    expect(book.siblingsOf("b", T0 + FORMER_EXIT_MS - 1)).toEqual(["a"]);
    expect(book.siblingsOf("b", T0 + FORMER_EXIT_MS)).toEqual([]);
    expect(book.anyShared).toBe(false);
  });
});
