/**
 * The Python Scrapy workers (`crawl/python/crawl_worker/scrapy_worker.py`, Debian's
 * `/usr/bin/python3` with python3-scrapy, python3-grpcio, python3-protobuf, python3-redis): how many
 * of a strategy's workers run in Python, the command that starts one, and a preflight check that
 * the interpreter has the modules (a clear error instead of W silent worker failures).
 */
import { spawnSync } from "node:child_process";

/** The interpreter (`CRAWL_PYTHON`, default Debian's). */
export const PYTHON = process.env["CRAWL_PYTHON"] ?? "/usr/bin/python3";
export const PYTHON_WORKER = "crawl/python/crawl_worker/scrapy_worker.py";
const MODULES = ["scrapy", "redis", "grpc", "google.protobuf"];

/** argv before the config JSON, for `runWorkers({ command })`. */
export function pythonWorkerCommand(): readonly string[] {
  return [PYTHON, PYTHON_WORKER];
}

/** `CRAWL_PYTHON_WORKERS` of `total` workers (default: half, rounded down; 0 disables). */
export function pythonWorkerCount(total: number): number {
  const raw = process.env["CRAWL_PYTHON_WORKERS"];
  if (raw === undefined || raw === "") return Math.floor(total / 2);
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0) throw new Error(`CRAWL_PYTHON_WORKERS must be an integer ≥ 0, got "${raw}"`);
  return Math.min(n, total);
}

/** Throws when the interpreter or one of the worker's modules is missing. */
export function checkPython(): void {
  const r = spawnSync(PYTHON, ["-c", `import ${MODULES.join(", ")}`], { encoding: "utf8" });
  if (r.error !== undefined || r.status !== 0) {
    const why = r.error?.message ?? r.stderr.trim().split("\n").at(-1) ?? `exit ${String(r.status)}`;
    throw new Error(
      `Python workers need ${PYTHON} with ${MODULES.join(", ")} (apt-get install -y python3-scrapy python3-grpcio python3-protobuf python3-redis), or CRAWL_PYTHON_WORKERS=0: ${why}`,
    );
  }
}
