/**
 * Internal to the Redis store: the servers behind a client — the one server of a `Redis`, or the
 * nodes of a `Cluster` (masters, or all of them) as the client's slot map knows them now.
 */
import { Cluster } from "ioredis";
import type { Redis } from "ioredis";
import type { RedisClient } from "./scripts.js";

/** The servers that hold data (a single server, or a cluster's masters). */
export function masters(client: RedisClient): Redis[] {
  return client instanceof Cluster ? client.nodes("master") : [client];
}

/** Every server (a cluster's replicas too). */
export function allServers(client: RedisClient): Redis[] {
  return client instanceof Cluster ? client.nodes("all") : [client];
}

/** Resolves once the client is ready (connected; a cluster: its slot map loaded), or after `timeoutMs`. */
export function whenReady(client: RedisClient, timeoutMs: number): Promise<void> {
  if (client.status === "ready") return Promise.resolve();
  return new Promise((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      client.removeListener("ready", done);
      resolve();
    };
    const timer = setTimeout(done, timeoutMs);
    client.once("ready", done);
  });
}
