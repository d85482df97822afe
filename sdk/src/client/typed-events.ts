/** An event map: each event's name, and the signature of its listeners. */
export type ListenerMap<T> = { readonly [K in keyof T]: (...args: never[]) => void };

/** An event's name in `Events`. */
type EventName<Events> = keyof Events & string;

interface Registration<Listener> {
  readonly listener: Listener;
  readonly once: boolean;
}

/**
 * A small typed event emitter: `on("mode", (mode) => …)` knows the listener's arguments from the
 * map, and only the owner (a subclass) can emit. As with Node's `EventEmitter`: listeners run
 * synchronously, in the order they were added; one added during an emit is first called at the
 * next; a listener that throws stops the emit and the error reaches the emitting code.
 */
export class TypedEmitter<Events extends ListenerMap<Events>> {
  readonly #listeners = new Map<string, readonly Registration<Events[EventName<Events>]>[]>();

  /** Call `listener` at every `event`. */
  on<K extends EventName<Events>>(event: K, listener: Events[K]): this {
    return this.#add(event, { listener, once: false });
  }

  /** Call `listener` at the next `event` only. */
  once<K extends EventName<Events>>(event: K, listener: Events[K]): this {
    return this.#add(event, { listener, once: true });
  }

  /** Stop calling `listener` at `event` (its latest registration, when it was added twice). */
  off<K extends EventName<Events>>(event: K, listener: Events[K]): this {
    const list = this.#listeners.get(event) ?? [];
    const i = list.map((r) => r.listener).lastIndexOf(listener);
    if (i >= 0) this.#set(event, [...list.slice(0, i), ...list.slice(i + 1)]);
    return this;
  }

  /** Remove every listener of `event`, or of every event. */
  removeAllListeners(event?: EventName<Events>): this {
    if (event === undefined) this.#listeners.clear();
    else this.#listeners.delete(event);
    return this;
  }

  /** How many listeners `event` has. */
  listenerCount(event: EventName<Events>): number {
    return this.#listeners.get(event)?.length ?? 0;
  }

  /** Call the listeners of `event` with `args`; true when it had any. */
  protected emit<K extends EventName<Events>>(event: K, ...args: Parameters<Events[K]>): boolean {
    const list = this.#listeners.get(event);
    if (list === undefined) return false;
    if (list.some((r) => r.once))
      this.#set(
        event,
        list.filter((r) => !r.once),
      );
    for (const r of list) Reflect.apply(r.listener, this, args);
    return true;
  }

  #add(event: string, r: Registration<Events[EventName<Events>]>): this {
    this.#set(event, [...(this.#listeners.get(event) ?? []), r]);
    return this;
  }

  #set(event: string, list: readonly Registration<Events[EventName<Events>]>[]): void {
    if (list.length === 0) this.#listeners.delete(event);
    else this.#listeners.set(event, list);
  }
}
