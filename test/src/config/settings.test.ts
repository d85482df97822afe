import { describe, expect, it } from "vitest";
import { SettingsError, loadSettings, probeFirstPools } from "../../../src/config/settings.js";
import { parseProxiesFile } from "../../../src/config/proxies-file.js";

describe("settings", () => {
  it("has the documented defaults", () => {
    const s = loadSettings({});
    expect(s.listenAddress).toBe("127.0.0.1:50051");
    expect(s.redisUrl).toBe("");
    expect([s.ttlDefaultMs, s.ttlMinMs, s.ttlMaxMs]).toEqual([30_000, 1_000, 3_600_000]);
    expect(s.banTtlMs).toBe(3_600_000);
    expect(s.scoring.delta.PROXY_ERROR).toBe(-15);
    expect(s.scoring.quarantineBaseMs).toBe(600_000);
    expect(s.healthLeaderTtlMs).toBe(10_000);
    expect(s.poolShards).toEqual({ all: 1, byPool: {} });
  });

  it("reads every value from the environment", () => {
    const s = loadSettings({
      LISTEN_ADDRESS: "0.0.0.0:6000",
      REDIS_URL: "redis://r:6379",
      SCORE_FLOOR: "20",
      MAX_QUARANTINES: "5",
      HEALTH_CHECK_URL: "http://x.example/",
      LOG_LEVEL: "Debug",
      HEALTH_CHECK_URLS: "eu=http://eu.example/",
    });
    expect(s.healthCheckUrls["eu"]).toBe("http://eu.example/");
    expect(s.listenAddress).toBe("0.0.0.0:6000");
    expect(s.scoring.floor).toBe(20);
    expect(s.scoring.maxQuarantines).toBe(5);
    expect(s.healthCheckUrl).toBe("http://x.example/");
    expect(loadSettings({ REDIS_URL: "redis://r:6379", POOL_SHARDS: "2,big=8" }).poolShards).toEqual({ all: 2, byPool: { big: 8 } });
  });

  it("reaches Redis through Sentinels with their auth and the master's", () => {
    const s = loadSettings({
      REDIS_SENTINELS: "10.0.0.1:26379, 10.0.0.2:26379",
      REDIS_SENTINEL_NAME: "pbmaster",
      REDIS_SENTINEL_PASSWORD: "sp",
      REDIS_PASSWORD: "dp",
      POOL_SHARDS: "2",
    });
    expect(s.redisSentinels).toEqual(["10.0.0.1:26379", "10.0.0.2:26379"]);
    expect([s.redisSentinelName, s.redisSentinelPassword, s.redisPassword, s.redisUrl]).toEqual(["pbmaster", "sp", "dp", ""]);
  });

  it("refuses bad values, naming the variable", () => {
    const cases: Array<[Record<string, string>, RegExp]> = [
      [{ LISTEN_ADDRESS: "nowhere" }, /LISTEN_ADDRESS/],
      [{ LEASE_TTL_DEFAULT_MS: "-5" }, /LEASE_TTL_DEFAULT_MS/],
      [{ LEASE_TTL_MIN_MS: "60000", LEASE_TTL_DEFAULT_MS: "30000" }, /LEASE_TTL_MIN_MS ≤ LEASE_TTL_DEFAULT_MS/],
      [{ REDIS_URL: "localhost:6379" }, /REDIS_URL/],
      [{ QUARANTINE_JITTER: "2" }, /QUARANTINE_JITTER/],
      [{ HEALTH_CHECK_URL: "ftp://x" }, /HEALTH_CHECK_URL/],
      [{ PROXIES_POOL: "a b" }, /PROXIES_POOL/],
      [{ LOG_LEVEL: "chatty" }, /LOG_LEVEL=chatty/],
      [{ HEALTH_CHECK_URLS: "eu" }, /HEALTH_CHECK_URLS/],
      [{ REDIS_URL: "redis://r:6379", POOL_SHARDS: "big=0" }, /POOL_SHARDS=big=0/],
      [{ POOL_SHARDS: "4" }, /POOL_SHARDS needs REDIS_URL/],
      [{ REDIS_URL: "redis://r:6379", REDIS_SENTINELS: "s:26379" }, /REDIS_URL and REDIS_SENTINELS go apart/],
      [{ REDIS_CLUSTER_NODES: "c:7000", REDIS_SENTINELS: "s:26379" }, /REDIS_CLUSTER_NODES and REDIS_SENTINELS go apart/],
      [{ REDIS_SENTINELS: "s:26379" }, /REDIS_SENTINELS needs REDIS_SENTINEL_NAME/],
      [{ REDIS_SENTINELS: "s:26379,nohost", REDIS_SENTINEL_NAME: "m" }, /REDIS_SENTINELS has "nohost"/],
      [{ REDIS_SENTINEL_NAME: "m" }, /need REDIS_SENTINELS/],
      [{ REDIS_URL: "redis://r:6379", REDIS_PASSWORD: "pw" }, /put them in REDIS_URL/],
      [{ REDIS_SENTINELS: "s:26379", REDIS_SENTINEL_NAME: "m", REDIS_USERNAME: "u" }, /REDIS_USERNAME needs REDIS_PASSWORD/],
    ];
    for (const [env, message] of cases) {
      expect(() => loadSettings(env)).toThrow(SettingsError);
      expect(() => loadSettings(env)).toThrow(message);
    }
  });
});

describe("pools whose shared-host proxies wait for their first probe (G9)", () => {
  it("are the checked pools, except those GRANT_UNKNOWN_EXITS names", () => {
    const env = { HEALTH_CHECK_URL: "http://echo.example/", HEALTH_CHECK_POOLS: "default,res", HEALTH_CHECK_URLS: "isp=http://e.example/" };
    expect([...probeFirstPools(loadSettings(env))].sort()).toEqual(["default", "isp", "res"]);
    expect([...probeFirstPools(loadSettings({ ...env, GRANT_UNKNOWN_EXITS: "res, isp" }))]).toEqual(["default"]);
    expect(probeFirstPools(loadSettings({ ...env, GRANT_UNKNOWN_EXITS: "*" })).size).toBe(0);
    expect(probeFirstPools(loadSettings({})).size).toBe(0);
    expect(() => loadSettings({ GRANT_UNKNOWN_EXITS: "bad pool" })).toThrow(/GRANT_UNKNOWN_EXITS/);
  });
});

describe("proxies file", () => {
  it("parses url, tier and labels, skipping comments and blank lines", () => {
    const specs = parseProxiesFile("# pool\n\n10.0.0.1:3128 tier=dc country=de\nhttp://u:p@10.0.0.2:8080\n", "p.txt");
    expect(specs).toEqual([
      { id: "10.0.0.1:3128", url: "http://10.0.0.1:3128", tier: "dc", labels: { country: "de" } },
      { id: "u@10.0.0.2:8080", url: "http://u:p@10.0.0.2:8080", tier: "", labels: {} },
    ]);
  });

  it("names the file and line of a bad entry", () => {
    expect(() => parseProxiesFile("10.0.0.1:3128\n10.0.0.2\n", "p.txt")).toThrow(/p\.txt:2: .*no port/);
    expect(() => parseProxiesFile("10.0.0.1:3128 country\n", "p.txt")).toThrow(/p\.txt:1: word 2 of the line is not key=value/);
  });
});
