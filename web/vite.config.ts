/// <reference types="vitest/config" />
// Vite builds the front-end straight into the Python package, so `pip install` ships it
// and the FastAPI app serves it at `/`. `npm run dev` proxies the stream to a running
// `starling serve` on port 8000 (the Origin header is rewritten so the server's
// same-origin check accepts the dev page).
import { defineConfig } from "vite";

export default defineConfig({
  base: "./",
  build: {
    outDir: "../src/starling/server/static",
    emptyOutDir: true,
    target: "es2022",
    chunkSizeWarningLimit: 1500,
    sourcemap: false,
  },
  server: {
    proxy: {
      "/ws": { target: "ws://127.0.0.1:8000", ws: true, changeOrigin: true, rewriteWsOrigin: true },
      "/api": { target: "http://127.0.0.1:8000", changeOrigin: true },
    },
  },
  test: {
    include: ["test/**/*.test.ts"],
    environment: "node",
    testTimeout: 30000,
  },
});
