import { mkdir, mkdtemp, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { SourceFetchError, SourceFormatError } from "../../../../src/health/sources/errors.js";
import { parseHeaders, readHeaders } from "../../../../src/health/sources/headers.js";
import { parseSourceList } from "../../../../src/health/sources/parse.js";

const lines = { format: "lines", jsonPath: "", tier: "", labels: {} } as const;
const json = (jsonPath: string) => ({ format: "json", jsonPath, tier: "dc", labels: { country: "us" } }) as const;

describe("source lists", () => {
  it("reads lines: host:port or URLs, comments and blanks skipped, repeats once", () => {
    const specs = parseSourceList("# list\n1.2.3.4:8080\r\n\n  http://u:pw@5.6.7.8:3128  \n1.2.3.4:8080\n", lines);
    expect(specs.map((s) => s.url)).toEqual(["http://1.2.3.4:8080", "http://u:pw@5.6.7.8:3128"]);
  });

  it("an entry that is not a proxy makes the answer malformed, naming the line but not the entry", () => {
    expect(() => parseSourceList("1.2.3.4:80\nhttp://user:s3cret@host\n", lines)).toThrow(SourceFormatError);
    try {
      parseSourceList("1.2.3.4:80\nhttp://user:s3cret@host\n", lines);
    } catch (err) {
      expect(String(err)).toContain("line 2");
      expect(String(err)).not.toContain("s3cret");
    }
  });

  it("reads JSON at a dotted path: strings, or a field of objects, with the source's tier and labels", () => {
    const body = JSON.stringify({ data: { proxies: ["1.1.1.1:1", "2.2.2.2:2"] }, list: [{ p: { url: "3.3.3.3:3" } }] });
    expect(parseSourceList(body, json("data.proxies")).map((s) => s.id)).toEqual(["1.1.1.1:1", "2.2.2.2:2"]);
    const objs = parseSourceList(body, json("list[].p.url"));
    expect(objs).toEqual([{ id: "3.3.3.3:3", url: "http://3.3.3.3:3", tier: "dc", labels: { country: "us" } }]);
    expect(parseSourceList('["4.4.4.4:4"]', json("")).map((s) => s.id)).toEqual(["4.4.4.4:4"]);
  });

  it("JSON that is not there, not an array, or not strings is malformed", () => {
    expect(() => parseSourceList("<html>", json(""))).toThrow(/not JSON/);
    expect(() => parseSourceList('{"data":{}}', json("data.proxies"))).toThrow(/"data.proxies" is not an array/);
    expect(() => parseSourceList('{"a":[1]}', json("a"))).toThrow(/a\[0\] is not a string/);
    expect(() => parseSourceList('{"a":[{"u":"1.1.1.1:1"},{}]}', json("a[].u"))).toThrow(/a\[1\]\.u is not a string/);
  });
});

describe("headers files", () => {
  it("reads Name: value lines", () => {
    expect(parseHeaders("# key\nX-Api-Key: abc:def\n\nAuthorization:  Bearer t \n")).toEqual({
      "X-Api-Key": "abc:def",
      Authorization: "Bearer t",
    });
  });

  it("a bad line is refused by number, its value never quoted", () => {
    expect(() => parseHeaders("X-Key abc-secret\n")).toThrow(SourceFetchError);
    try {
      parseHeaders("ok: 1\nbad line secret-value\n");
    } catch (err) {
      expect(String(err)).toContain("line 2");
      expect(String(err)).not.toContain("secret-value");
    }
  });
});

describe("reading a headers file", () => {
  it("refuses what is not a regular file, and a missing one, by path", async () => {
    await expect(readHeaders("/dev/zero", "/dev")).rejects.toThrow(/not a regular file/);
    await expect(readHeaders("/nonexistent/headers", "/nonexistent")).rejects.toThrow(/cannot be read \(ENOENT\)/);
    expect(await readHeaders("", "")).toEqual({});
  });

  it("reads only files inside SOURCE_HEADERS_DIR, links resolved", async () => {
    const root = await mkdtemp(join(tmpdir(), "pb-hdr-"));
    const dir = join(root, "headers");
    await mkdir(dir);
    await writeFile(join(dir, "provider"), "X-Api-Key: k\n");
    await writeFile(join(root, "elsewhere"), "Authorization: other\n");
    await symlink(join(root, "elsewhere"), join(dir, "link"));
    expect(await readHeaders(join(dir, "provider"), dir)).toEqual({ "X-Api-Key": "k" });
    await expect(readHeaders(join(root, "elsewhere"), dir)).rejects.toThrow(/not inside SOURCE_HEADERS_DIR/);
    await expect(readHeaders(join(dir, "..", "elsewhere"), dir)).rejects.toThrow(/not inside SOURCE_HEADERS_DIR/);
    await expect(readHeaders(join(dir, "link"), dir)).rejects.toThrow(/not inside SOURCE_HEADERS_DIR/);
    // a directory whose name starts like the allowed one is another directory
    await mkdir(`${dir}2`);
    await writeFile(join(`${dir}2`, "x"), "A: b\n");
    await expect(readHeaders(join(`${dir}2`, "x"), dir)).rejects.toThrow(/not inside SOURCE_HEADERS_DIR/);
    await expect(readHeaders(join(dir, "provider"), "")).rejects.toThrow(/SOURCE_HEADERS_DIR/);
    await rm(root, { recursive: true, force: true });
  });
});
