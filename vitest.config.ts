import { defineConfig } from "vitest/config";

// Tests import the SDK by its package name; this condition resolves it to its TypeScript sources
// (sdk/package.json "exports"), as `node --conditions=@proxybroker/source` does for processes.
const SOURCE_CONDITIONS = ["@proxybroker/source", "node", "import", "default"];

export default defineConfig({
  resolve: { conditions: SOURCE_CONDITIONS },
  ssr: { resolve: { conditions: SOURCE_CONDITIONS } },
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 20_000,
    hookTimeout: 30_000,
    pool: "forks",
    // Two files at a time: most tests wait on real processes (brokers, Redis, tinyproxies,
    // Chromium) rather than compute, so on 2 cores the suite takes about 5 min instead of 8–9.
    maxWorkers: 2,
    // The JSON report lets .ci/run print a one-line total.
    reporters: ["default", "json"],
    outputFile: { json: ".tmp/vitest.json" },
  },
});
