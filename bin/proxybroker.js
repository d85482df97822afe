#!/usr/bin/env node
// The `proxybroker` command. In the repository (TypeScript sources present) it runs src/cli.ts
// with tsx and the SDK's source condition, forwarding signals (SIGTERM drains the broker);
// installed from the package, the compiled dist/src/cli.js.
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";

const source = fileURLToPath(new URL("../src/cli.ts", import.meta.url));
if (existsSync(source)) {
  const child = spawn(process.execPath, ["--conditions=@proxybroker/source", "--import", "tsx", source, ...process.argv.slice(2)], {
    stdio: "inherit",
  });
  for (const signal of ["SIGTERM", "SIGINT", "SIGHUP"]) process.on(signal, () => child.kill(signal));
  child.on("exit", (code, signal) => process.exit(code ?? (signal === null ? 1 : 128)));
} else {
  await import(new URL("../dist/src/cli.js", import.meta.url).href);
}
