/**
 * The shared conformance suite of `LeaseStore` (docs/store-semantics.md, operation by operation).
 * Every store implementation registers it from its own test file with a factory that builds a
 * fresh, empty store per test. Tests drive a fake clock and a seeded random source: none sleeps.
 */
import { describe } from "vitest";
import { adaptiveSuite } from "./adaptive.js";
import { adminSuite } from "./admin.js";
import { exclusivitySuite } from "./exclusivity.js";
import { exitSuite } from "./exits.js";
import { gapLeaseSuite } from "./gap-leases.js";
import { grantIntervalSuite } from "./grant-interval.js";
import type { ConformanceOptions, StoreFactory } from "./harness.js";
import { identitySuite } from "./identity.js";
import { isolationSuite } from "./isolation.js";
import { leaseSuite, proxyIdSuite, reservationSuite, retrySuite } from "./leases.js";
import { pacingSuite } from "./pacing.js";
import { epochSuite, poolSuite } from "./pools.js";
import { eventSuite } from "./events.js";
import { latelySuite } from "./lately.js";
import { leaderSuite } from "./leader.js";
import { reportSuite } from "./reports.js";
import { selectionSuite } from "./selection.js";
import { scoringSuite } from "./scoring.js";
import { sessionSuite } from "./sessions.js";
import { sourceSuite } from "./sources.js";

export type { ConformanceOptions, StoreDeps, StoreFactory } from "./harness.js";

/** Register the conformance suite for one store implementation under `name`. */
export function describeStoreConformance(name: string, factory: StoreFactory, options: ConformanceOptions = {}): void {
  describe(`LeaseStore conformance: ${name}`, () => {
    exclusivitySuite(factory);
    leaseSuite(factory);
    retrySuite(factory);
    proxyIdSuite(factory);
    reservationSuite(factory);
    gapLeaseSuite(factory);
    pacingSuite(factory, options);
    adaptiveSuite(factory, options);
    scoringSuite(factory);
    sessionSuite(factory);
    poolSuite(factory);
    epochSuite(factory);
    adminSuite(factory);
    identitySuite(factory);
    reportSuite(factory);
    selectionSuite(factory, options);
    eventSuite(factory, options);
    leaderSuite(factory);
    latelySuite(factory);
    isolationSuite(factory);
    exitSuite(factory, options);
    sourceSuite(factory);
    grantIntervalSuite(factory);
  });
}
