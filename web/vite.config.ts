// The page is served by `lode ui` from the lode binary: one entry, hashed asset
// names (cached for good), nothing inlined that the Content-Security-Policy would
// refuse, no source maps in the binary.
import { defineConfig } from "vite";

export default defineConfig({
  base: "/",
  build: {
    target: "es2020",
    assetsInlineLimit: 0,
    sourcemap: false,
    modulePreload: { polyfill: false },
    reportCompressedSize: false,
  },
  // One forked worker and generous time limits: on a loaded 2-core CI machine
  // Vitest's default worker start and RPC timeouts can fail a run whose tests
  // all pass, and one test file gains nothing from a pool.
  test: {
    include: ["tests/unit/**/*.test.ts"],
    pool: "forks",
    poolOptions: { forks: { singleFork: true } },
    testTimeout: 30000,
    hookTimeout: 30000,
    teardownTimeout: 30000,
  },
} as any);
