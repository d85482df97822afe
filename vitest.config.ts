import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 20_000,
    hookTimeout: 30_000,
    pool: "forks",
    // The JSON report lets .ci/run print a one-line total.
    reporters: ["default", "json"],
    outputFile: { json: ".tmp/vitest.json" },
  },
});
