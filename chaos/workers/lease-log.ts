/**
 * A worker's lease log: one JSON line per grant and per end, appended with a synchronous write so
 * that a line is in the kernel the moment it is logged — a SIGKILL right after loses nothing.
 */
import { closeSync, openSync, writeSync } from "node:fs";
import type { EndLine, EventLine, GrantLine, LeaseLine } from "../records.js";

/** A line without what the log fills in itself. */
type Body<T> = Omit<T, "t" | "worker" | "gen">;

export class LeaseLog {
  private fd: number | undefined;
  private granted = 0;

  constructor(
    file: string,
    private readonly who: { readonly worker: string; readonly gen: number },
  ) {
    this.fd = openSync(file, "a");
  }

  /** Grants logged so far by this process. */
  get grants(): number {
    return this.granted;
  }

  grant(line: Body<GrantLine>): void {
    this.granted += 1;
    this.write({ t: "grant", ...this.who, ...line });
  }

  end(line: Body<EndLine>): void {
    this.write({ t: "end", ...this.who, ...line });
  }

  event(line: Body<EventLine>): void {
    this.write({ t: "event", ...this.who, ...line });
  }

  close(): void {
    if (this.fd !== undefined) closeSync(this.fd);
    this.fd = undefined;
  }

  private write(line: LeaseLine): void {
    if (this.fd === undefined) return;
    writeSync(this.fd, `${JSON.stringify(line)}\n`);
  }
}
