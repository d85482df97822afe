/**
 * The partition mode's network (CRAWL_PARTITION_AT_S): a TCP relay in front of the broker for the
 * one worker that is cut off, cut at a set time — from then on every byte is dropped both ways
 * while every socket stays open (a silent partition, not a closed connection) — and left cut until
 * it is closed after the run.
 */
import { startTcpRelay } from "../test/support/tcp-relay.js";

export interface PartitionRelay {
  /** `127.0.0.1:<port>`: the cut worker's broker address. */
  readonly address: string;
  /** Epoch ms of the cut, once it happened (undefined: closed before it). */
  cutAt(): number | undefined;
  /** Close the relay (and cancel the cut if it is still to come). */
  close(): Promise<void>;
}

export async function startPartitionRelay(options: { readonly brokerAddress: string; readonly cutAt: number }): Promise<PartitionRelay> {
  const relay = await startTcpRelay(options.brokerAddress);
  let cutAt: number | undefined;
  const timer = setTimeout(
    () => {
      relay.cut();
      cutAt = Date.now();
      process.stderr.write(`${cutAt} crawl: partition: relay ${relay.address} cut\n`);
    },
    Math.max(0, options.cutAt - Date.now()),
  );
  return {
    address: relay.address,
    cutAt: () => cutAt,
    close: async () => {
      clearTimeout(timer);
      await relay.close();
    },
  };
}
