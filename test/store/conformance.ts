/**
 * The shared conformance suite of `LeaseStore` (docs/store-semantics.md, operation by operation).
 * Every store implementation registers it from its own test file with a factory that builds a
 * fresh, empty store per test. Tests drive a fake clock and a seeded random source: none sleeps.
 */
import { describe } from "vitest";
import { adminSuite } from "./conformance/admin.js";
import { exclusivitySuite } from "./conformance/exclusivity.js";
import type { StoreFactory } from "./conformance/harness.js";
import { leaseSuite } from "./conformance/leases.js";
import { pacingSuite } from "./conformance/pacing.js";
import { poolSuite } from "./conformance/pools.js";
import { reportSuite } from "./conformance/reports.js";
import { selectionSuite } from "./conformance/selection.js";
import { scoringSuite } from "./conformance/scoring.js";
import { sessionSuite } from "./conformance/sessions.js";

export type { StoreDeps, StoreFactory } from "./conformance/harness.js";

/** Register the conformance suite for one store implementation under `name`. */
export function describeStoreConformance(name: string, factory: StoreFactory): void {
  describe(`LeaseStore conformance: ${name}`, () => {
    exclusivitySuite(factory);
    leaseSuite(factory);
    pacingSuite(factory);
    scoringSuite(factory);
    sessionSuite(factory);
    poolSuite(factory);
    adminSuite(factory);
    reportSuite(factory);
    selectionSuite(factory);
  });
}
