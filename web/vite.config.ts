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
  test: {
    include: ["tests/unit/**/*.test.ts"],
  },
} as any);
