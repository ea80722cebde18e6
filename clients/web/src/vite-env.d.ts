// Vite's CSS imports, for tsc.
declare module "*.css";
