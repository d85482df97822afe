import { describe, expect, it } from "vitest";
import { TypedEmitter } from "../../../sdk/src/client/typed-events.js";

interface Events {
  readonly count: (n: number) => void;
  readonly named: (name: string, at: number) => void;
  readonly ping: () => void;
}

/** An emitter whose test can emit. */
class Emitter extends TypedEmitter<Events> {
  fire<K extends keyof Events & string>(event: K, ...args: Parameters<Events[K]>): boolean {
    return this.emit(event, ...args);
  }
}

describe("TypedEmitter", () => {
  it("calls listeners in the order they were added, with the event's arguments", () => {
    const e = new Emitter();
    const calls: string[] = [];
    e.on("named", (name, at) => calls.push(`a ${name} ${at}`));
    e.on("named", (name) => calls.push(`b ${name}`));
    e.on("count", (n) => calls.push(`count ${n}`));
    expect(e.fire("named", "x", 1)).toBe(true);
    expect(e.fire("count", 2)).toBe(true);
    expect(e.fire("ping")).toBe(false);
    expect(calls).toEqual(["a x 1", "b x", "count 2"]);
  });

  it("once calls a listener at the next event only; off removes one; removeAllListeners all", () => {
    const e = new Emitter();
    const seen: number[] = [];
    const twice = (n: number) => seen.push(n * 10);
    e.once("count", (n) => seen.push(n));
    e.on("count", twice);
    e.on("count", twice);
    expect(e.listenerCount("count")).toBe(3);
    e.fire("count", 1);
    e.off("count", twice);
    e.fire("count", 2);
    expect(seen).toEqual([1, 10, 10, 20]);
    e.on("ping", () => seen.push(0));
    e.removeAllListeners("count");
    expect(e.listenerCount("count")).toBe(0);
    expect(e.listenerCount("ping")).toBe(1);
    e.removeAllListeners();
    expect(e.fire("ping")).toBe(false);
  });

  it("a listener added during an emit is first called at the next one; a throwing listener stops the emit", () => {
    const e = new Emitter();
    const seen: string[] = [];
    e.on("ping", () => {
      seen.push("first");
      e.on("ping", () => seen.push("late"));
    });
    e.fire("ping");
    expect(seen).toEqual(["first"]);
    const f = new Emitter();
    f.on("ping", () => {
      throw new Error("listener failed");
    });
    f.on("ping", () => seen.push("never"));
    expect(() => f.fire("ping")).toThrow("listener failed");
    expect(seen).toEqual(["first"]);
  });

  it("types each listener by its event (checked by npm run typecheck)", () => {
    const e = new Emitter();
    // @ts-expect-error a count listener takes a number
    e.on("count", (n: string) => n);
    // @ts-expect-error no such event
    e.on("nothing", () => undefined);
    // @ts-expect-error emitting is the owner's (protected)
    e.emit("ping");
    expect(e.listenerCount("count")).toBe(1);
  });
});
