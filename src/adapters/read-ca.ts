import { readFile } from "node:fs/promises";
import { UsageError } from "../core/errors.js";
import { describeFsError } from "./read-input.js";

/** Reads `--ca` files: each must hold at least one PEM certificate. */
export async function readCaFiles(paths: readonly string[]): Promise<string[]> {
  return Promise.all(
    paths.map(async (path) => {
      let text: string;
      try {
        text = await readFile(path, "utf8");
      } catch (error) {
        throw new UsageError(`--ca ${path}: ${describeFsError(error)}`, { cause: error });
      }
      if (!text.includes("-----BEGIN CERTIFICATE-----")) throw new UsageError(`--ca ${path}: no PEM certificate in the file`);
      return text;
    }),
  );
}
