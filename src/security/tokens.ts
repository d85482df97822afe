import { createHash, timingSafeEqual } from "node:crypto";

/** `worker` may call the ProxyBroker service; `admin` may call ProxyBroker and ProxyAdmin. */
export type Role = "worker" | "admin";

/** Who a token belongs to. */
export interface TokenOwner {
  readonly role: Role;
  /** The optional third field of the token's line (for logs). */
  readonly name: string | undefined;
}

/** A tokens file that cannot be used; the message names the line. */
export class TokensFileError extends Error {
  override readonly name = "TokensFileError";
}

/** Shorter tokens are refused: a token is the only secret between the network and the pool. */
export const MIN_TOKEN_LENGTH = 16;
const TOKEN = /^[\x21-\x7e]+$/;
const NAME = /^[A-Za-z0-9._@-]{1,64}$/;

function digest(token: string): Buffer {
  return createHash("sha256").update(token, "utf8").digest();
}

interface Entry {
  readonly digest: Buffer;
  readonly owner: TokenOwner;
}

/**
 * The bearer tokens of `AUTH_TOKENS_FILE`: one `<token> <role> [<name>]` per line, `#` starts a
 * comment line. Only SHA-256 digests are kept, and a lookup compares the presented token's digest
 * with every entry's in constant time, so neither timing nor a heap dump gives a token away.
 */
export class TokenTable {
  private constructor(private readonly entries: readonly Entry[]) {}

  /** Parse the file's text; throws `TokensFileError` naming the first bad line. */
  static parse(text: string, source = "tokens file"): TokenTable {
    const entries: Entry[] = [];
    const seen = new Set<string>();
    text.split(/\r?\n/).forEach((raw, i) => {
      const line = raw.trim();
      if (line === "" || line.startsWith("#")) return;
      const where = `${source} line ${i + 1}`;
      const fields = line.split(/\s+/);
      if (fields.length < 2 || fields.length > 3) throw new TokensFileError(`${where}: expected "<token> <role> [<name>]"`);
      const [token = "", role = "", name] = fields;
      if (!TOKEN.test(token) || token.length < MIN_TOKEN_LENGTH) {
        throw new TokensFileError(`${where}: a token must be at least ${MIN_TOKEN_LENGTH} printable characters`);
      }
      if (role !== "worker" && role !== "admin") throw new TokensFileError(`${where}: role must be worker or admin, got "${role}"`);
      if (name !== undefined && !NAME.test(name)) throw new TokensFileError(`${where}: a name must match ${NAME.source}`);
      const d = digest(token);
      const key = d.toString("hex");
      if (seen.has(key)) throw new TokensFileError(`${where}: the same token appears twice`);
      seen.add(key);
      entries.push({ digest: d, owner: { role, name } });
    });
    if (entries.length === 0) throw new TokensFileError(`${source} has no token: every call would be refused`);
    return new TokenTable(entries);
  }

  get size(): number {
    return this.entries.length;
  }

  /** The owner of `token`, or undefined. Takes the same time whichever entry (if any) matches. */
  lookup(token: string): TokenOwner | undefined {
    const d = digest(token);
    let found: TokenOwner | undefined;
    for (const e of this.entries) {
      if (timingSafeEqual(d, e.digest) && found === undefined) found = e.owner;
    }
    return found;
  }
}
