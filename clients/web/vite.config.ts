// The web table's build: Vite bundles src/ into dist/ (index.html plus
// hashed assets). @spades/client is the TypeScript client's built output
// (clients/typescript/dist, made by its client.mk); its imports of protobuf-es
// and Connect resolve to this package's copies, so the bundle has one of each.
import { fileURLToPath } from "node:url";
import { defineConfig } from "vite";

export default defineConfig({
  resolve: {
    alias: {
      "@spades/client": fileURLToPath(new URL("../typescript/dist/src/index.js", import.meta.url)),
    },
    dedupe: ["@bufbuild/protobuf", "@connectrpc/connect"],
  },
  oxc: {
    jsx: { runtime: "automatic", importSource: "preact" },
  },
  build: {
    outDir: "dist",
    emptyOutDir: true,
    target: "es2022",
    sourcemap: true,
  },
});
