import { Command } from "commander";
import { afterEach, describe, expect, it } from "vitest";
import { addGatewayCommand } from "../../../src/gateway/command.js";
import { GATEWAY_ENV } from "../../../src/gateway/settings.js";
import type { GatewayInput } from "../../../src/gateway/settings.js";

function gatewayCommand(): Command {
  const program = new Command();
  addGatewayCommand(program);
  const gw = program.commands.find((c) => c.name() === "gateway");
  if (gw === undefined) throw new Error("no gateway command");
  return gw;
}

/** `proxybroker gateway` takes every setting as a flag, with its environment variable as the default (docs/gateway.md). */
describe("proxybroker gateway's flags", () => {
  const saved = { ...process.env };
  afterEach(() => {
    process.env = { ...saved };
  });

  it("has a flag for every setting but the broker token (read from the environment only)", () => {
    const flags = gatewayCommand().options.map((o) => o.attributeName());
    const settings = Object.keys(GATEWAY_ENV).filter((k) => k !== "token");
    expect(settings.filter((k) => !flags.includes(k))).toEqual([]);
    expect(flags).not.toContain("token");
  });

  it("defaults each flag to its environment variable", () => {
    for (const [key, name] of Object.entries(GATEWAY_ENV)) process.env[name] = `from-env-${key}`;
    const gw = gatewayCommand();
    for (const key of Object.keys(GATEWAY_ENV) as (keyof GatewayInput)[]) {
      if (key === "token") continue;
      expect(gw.options.find((o) => o.attributeName() === key)?.defaultValue, key).toBe(`from-env-${key}`);
    }
  });
});
