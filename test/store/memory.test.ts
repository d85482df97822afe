/**
 * The conformance suite against the in-memory engine.
 */
import { MemoryStore } from "../../sdk/engine/memory-store.js";
import { describeStoreConformance } from "./conformance.js";

describeStoreConformance("MemoryStore", async ({ clock, random, scoring }) => {
  const store = new MemoryStore({ scoring, clock, random });
  return { store, cleanup: () => store.close() };
});
