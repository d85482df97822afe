/** Why a source's refresh changed nothing: its answer could not be had, or could not be read. */

/** The list could not be fetched (network, timeout, HTTP status, too large, headers file). */
export class SourceFetchError extends Error {
  override readonly name = "SourceFetchError";
}

/** The answer is not a proxy list in the source's format. */
export class SourceFormatError extends Error {
  override readonly name = "SourceFormatError";
}
