import { X509Certificate } from "node:crypto";
import { readFile } from "node:fs/promises";
import { resolve } from "node:path";
import { UsageError } from "../core/errors.js";
import { describeFsError } from "./read-input.js";

const PEM_CERTIFICATE = /-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g;

/**
 * Reads `--ca` files: each must hold at least one PEM certificate, and every certificate in it
 * must parse. Node's TLS skips one it cannot read without a word, so a garbage CA file would
 * only show later as an untrusted certificate.
 */
export async function readCaFiles(paths: readonly string[], cwd: string): Promise<string[]> {
  return Promise.all(
    paths.map(async (path) => {
      let text: string;
      try {
        text = await readFile(resolve(cwd, path), "utf8");
      } catch (error) {
        throw new UsageError(`--ca ${path}: ${describeFsError(error)}`, { cause: error });
      }
      const certificates = text.match(PEM_CERTIFICATE) ?? [];
      if (certificates.length === 0) throw new UsageError(`--ca ${path}: no PEM certificate in the file`);
      for (const [index, certificate] of certificates.entries()) {
        try {
          new X509Certificate(certificate);
        } catch (error) {
          throw new UsageError(`--ca ${path}: certificate ${index + 1} cannot be read (${(error as Error).message})`, { cause: error });
        }
      }
      return text;
    }),
  );
}
