#!/usr/bin/env node
// CommonJS, as is the bundled CLI it loads: on Node 20 an ES module entry alone costs about 5 ms of
// every start (scripts/bundle-cli.mjs).
//
// The bundle's files are compiled with a V8 code cache kept per user: undici's public entry, which
// `wh send` needs whole (0.76 MB once its whitespace is out), and the CLI's own files compile from
// it in a fraction of the time (bench/cold-start.js). Node 22's module.enableCompileCache is not
// used: Node 20 lacks it, its cache holds only the top-level code (not the functions loading runs),
// and its default folder is os.tmpdir(), which other users of the machine can write to: a code
// cache is code, so one planted there would run as whoever starts wh. Here the folder is the
// user's cache folder, used only when it is theirs alone; when it cannot be used or written, the
// files compile as they always did. A Node startup snapshot (--build-snapshot) would skip loading
// altogether, but undici cannot be in one (docs/measured.md), and a snapshot is used only by a Node
// started with --snapshot-blob: a second process at every start.
"use strict";
const fs = require("node:fs");
const path = require("node:path");
const Module = require("node:module");

const BUNDLE = path.join(__dirname, "..", "dist", "cli-bundle");
// Loaded by Node itself: cosmiconfig's import() of an ES module config needs Node's loader (from a
// vm.Script it would need an option Node still calls experimental, and warns about).
const NODE_LOADS = new Set(["cosmiconfig.cjs"]);
// About 30 files of up to 360 KB: a few builds' worth (a command writes 2-6, one per file it loads).
const KEPT_CACHES = 30;

/** The user's cache folder for wh, by the platform's convention. */
function cacheRoot() {
  const home = require("node:os").homedir();
  if (process.platform === "win32") return path.join(process.env.LOCALAPPDATA || path.join(home, "AppData", "Local"), "wh", "Cache");
  if (process.platform === "darwin") return path.join(home, "Library", "Caches", "wh");
  const xdg = process.env.XDG_CACHE_HOME;
  return path.join(xdg && path.isAbsolute(xdg) ? xdg : path.join(home, ".cache"), "wh");
}

/**
 * A folder only this user can write to, or undefined: wh's folder and the one in it for this Node,
 * each made with mode 0700 if missing, and each a real folder (not a link), owned by this user and
 * writable by no one else, before anything is made or read inside it. Windows has no such modes;
 * its LOCALAPPDATA is the user's own.
 */
function privateCacheFolder() {
  const root = cacheRoot();
  const folder = path.join(root, `code-${process.version}-${process.arch}`);
  for (const dir of [root, folder]) {
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    if (process.platform === "win32") continue;
    const stat = fs.lstatSync(dir);
    if (!stat.isDirectory() || stat.uid !== process.getuid() || (stat.mode & 0o022) !== 0) return undefined;
  }
  return folder;
}

/**
 * Compiles bundle files with their cached code: `compile(module, filename)` runs the file as
 * Node's CommonJS loader would. A file without a cache gets one as soon as it has run, holding the
 * functions its loading compiled. Not later: wh changes V8's flags as it runs (src/adapters/v8-flags.ts),
 * and V8 refuses a cache made under other flags, so one made at exit would be refused and rewritten
 * at every start (measured: slower than none). A cache refused is left as it is, for the same reason.
 */
function cachedCompiler(folder) {
  const vm = require("node:vm");
  const { createHash } = require("node:crypto");
  return (module, filename) => {
    const source = fs.readFileSync(filename, "utf8");
    // The file's content names its cache: V8 itself checks only the source's length.
    const file = path.join(folder, createHash("sha1").update(source).digest("hex"));
    let cachedData;
    try {
      cachedData = fs.readFileSync(file);
    } catch {
      cachedData = undefined;
    }
    const script = new vm.Script(Module.wrap(source), { filename, cachedData });
    script.runInThisContext().call(module.exports, module.exports, Module.createRequire(filename), module, filename, path.dirname(filename));
    if (cachedData === undefined) writeCache(file, script);
  };
}

/**
 * Written whole or not at all (a file of its own, then renamed), readable by this user only; a
 * failure (a full disk, a read-only home) only means compiling again next time. Each build of wh
 * adds its files' caches: past KEPT_CACHES the oldest written go (one still in use is made again).
 */
function writeCache(file, script) {
  const temporary = `${file}.${process.pid}.tmp`;
  try {
    fs.writeFileSync(temporary, script.createCachedData(), { mode: 0o600, flag: "wx" });
    fs.renameSync(temporary, file);
    const folder = path.dirname(file);
    const written = fs.readdirSync(folder).map((name) => ({ path: path.join(folder, name), at: fs.statSync(path.join(folder, name)).mtimeMs }));
    for (const old of written.sort((a, b) => b.at - a.at).slice(KEPT_CACHES)) fs.rmSync(old.path, { force: true });
  } catch {
    fs.rm(temporary, { force: true }, () => {});
  }
}

/** Bundle files go through the code cache when the user's cache folder can be used; any other file loads as Node loads it. */
function useCodeCache() {
  let folder;
  try {
    folder = privateCacheFolder();
  } catch {
    folder = undefined;
  }
  if (folder === undefined) return;
  const compile = cachedCompiler(folder);
  const javascript = Module._extensions[".js"];
  Module._extensions[".cjs"] = (module, filename) =>
    path.dirname(filename) === BUNDLE && !NODE_LOADS.has(path.basename(filename)) ? compile(module, filename) : javascript(module, filename);
}

useCodeCache();
require("../dist/cli-bundle/main.cjs");
