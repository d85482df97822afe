/**
 * The conformance suite against the in-memory engine.
 */
import { MemoryStore } from "@proxybroker/sdk/engine";
import { describeStoreConformance } from "./conformance/index.js";

describeStoreConformance("MemoryStore", async ({ clock, random, scoring }) => {
  const store = new MemoryStore({ scoring, clock, random });
  return { store, cleanup: () => store.close() };
});
