/**
 * ProxyAdmin.AddProxies: the specs of the request, then the proxies its template makes
 * (docs/spec.md §11), each validated by parseProxySpec; what is valid goes to the store in one
 * call, what is not comes back as a `RejectedProxy` with its index and a redacted url.
 */
import { create } from "@bufbuild/protobuf";
import { InvalidInputError, expandTemplate, parseProxySpec } from "@proxybroker/sdk/model";
import type { ProxySpecInput, TemplateProxy } from "@proxybroker/sdk/model";
import { AddProxiesResponseSchema, RejectedProxySchema } from "@proxybroker/sdk/gen/proxybroker/v1/admin_pb";
import type { AddProxiesRequest, AddProxiesResponse, ProxyTemplate, RejectedProxy } from "@proxybroker/sdk/gen/proxybroker/v1/admin_pb";
import { redactProxyUrl, redactSecrets } from "../security/redact.js";
import { callerName } from "../security/auth.js";
import type { BrokerContext } from "./context.js";
import { audit } from "./audit.js";
import { checkPool } from "./validate.js";

/** Proxies per AddProxies call, the template's included. */
export const MAX_ADD_BATCH = 10_000;

/** The proxies `template` makes; none when it is unset or has no url. */
function templateProxies(template: ProxyTemplate | undefined): TemplateProxy[] {
  if (template === undefined || template.url === "") return [];
  try {
    return expandTemplate({
      url: template.url,
      sessions: template.sessions,
      labels: template.labels.map((l) => ({ key: l.key, values: [...l.values] })),
      tier: template.tier,
    });
  } catch (err) {
    if (err instanceof InvalidInputError) throw new InvalidInputError(`template: ${redactSecrets(err.message)}`);
    throw err;
  }
}

export async function addProxies(
  ctx: BrokerContext,
  req: AddProxiesRequest,
  caller: Parameters<typeof callerName>[0],
): Promise<AddProxiesResponse> {
  const pool = checkPool(req.pool);
  const specs: readonly { url: string; tier: string; labels: Readonly<Record<string, string>> }[] = [
    ...req.proxies,
    ...templateProxies(req.template),
  ];
  if (specs.length > MAX_ADD_BATCH) throw new InvalidInputError(`at most ${MAX_ADD_BATCH} proxies per call, got ${specs.length}`);
  const valid: ProxySpecInput[] = [];
  const rejected: RejectedProxy[] = [];
  const seen = new Set<string>();
  specs.forEach((spec, index) => {
    try {
      const p = parseProxySpec(spec);
      if (seen.has(p.id)) throw new InvalidInputError(`proxy ${p.id} appears twice in this request`);
      seen.add(p.id);
      valid.push(p);
    } catch (err) {
      const reason = err instanceof InvalidInputError ? err.message : String(err);
      rejected.push(create(RejectedProxySchema, { url: redactProxyUrl(spec.url), reason: redactSecrets(reason), index }));
    }
  });
  const r = valid.length > 0 ? await ctx.store.addProxies(pool, valid) : { added: [], updated: [] };
  // new proxies are probed at once: a proxy that shares its host waits for that (G9)
  if (r.added.length > 0) ctx.probeNew?.(pool, r.added);
  await audit(ctx, {
    actor: callerName(caller),
    method: "AddProxies",
    pool,
    detail: `${r.added.length} added, ${r.updated.length} updated, ${rejected.length} rejected`,
  });
  return create(AddProxiesResponseSchema, { added: r.added, updated: r.updated, rejected });
}
