import { readFile, stat } from "node:fs/promises";
import { TokenTable, TokensFileError } from "./tokens.js";

/** Largest tokens file read (a mistake, such as pointing at a log, fails clearly). */
const MAX_BYTES = 1 << 20;

/** Read and parse `AUTH_TOKENS_FILE`; rejects with `TokensFileError` or the file system's error. */
export async function loadTokensFile(path: string): Promise<TokenTable> {
  const info = await stat(path);
  if (info.size > MAX_BYTES) throw new TokensFileError(`${path} is larger than ${MAX_BYTES} bytes`);
  return TokenTable.parse(await readFile(path, "utf8"), path);
}
