/**
 * The human status page at /status: server-rendered HTML with a small inline stylesheet, no scripts and no
 * external assets. It shows what `/v1/status/` and friends answer: the overall state, each provider on each
 * gateway with 30 daily uptime bars, and each model with 24 hourly bars. Every dynamic text is escaped.
 */

export interface PageData {
  overview: {
    status: string; message: string; uptime_percentage: number | null; total_providers: number; operational_providers: number;
    total_models: number; healthy_models: number; requests_last_24h: number; avg_response_time_ms: number | null; last_updated: string;
  };
  providers: Array<{ provider: string; gateway: string; status: string; total_models: number; healthy_models: number;
    uptime_percentage: number | null; avg_response_time_ms: number | null; bars: Array<number | null> }>;
  models: Array<{ model_id: string; provider: string; gateway: string; status: string; tier: string;
    uptime_percentage: number | null; avg_response_time_ms: number | null; bars: Array<number | null> }>;
  /** UTC start of the first daily bar and of the first hourly bar (epoch ms), for the bar titles. */
  firstDay: number;
  firstHour: number;
}

const ESC: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
export const esc = (s: unknown) => String(s).replace(/[&<>"']/g, (c) => ESC[c]);

const pct = (v: number | null) => (v === null ? '—' : `${v.toFixed(2)} %`);
const ms = (v: number | null) => (v === null ? '—' : `${Math.round(v)} ms`);

/** Bar colour by uptime: green at least 99 %, amber at least 95 %, red below, grey without calls. */
export function barClass(v: number | null): string {
  if (v === null) return 'bar none';
  return v >= 99 ? 'bar up' : v >= 95 ? 'bar warn' : 'bar down';
}

const TONE: Record<string, string> = {
  operational: 'ok', online: 'ok', healthy: 'ok',
  degraded: 'warn',
  partial_outage: 'bad', major_outage: 'bad', outage: 'bad', unhealthy: 'bad',
  unknown: 'none',
};
const pill = (status: string) => `<span class="pill ${TONE[status] ?? 'none'}">${esc(status.replace('_', ' '))}</span>`;

function bars(values: Array<number | null>, start: number, stepMs: number, label: (t: number) => string): string {
  return `<div class="bars">${values.map((v, i) => {
    const title = `${label(start + i * stepMs)}: ${v === null ? 'no calls' : `${v.toFixed(2)} % uptime`}`;
    return `<span class="${barClass(v)}" title="${esc(title)}"></span>`;
  }).join('')}</div>`;
}

const day = (t: number) => new Date(t).toISOString().slice(0, 10);
const hour = (t: number) => `${new Date(t).toISOString().slice(0, 13).replace('T', ' ')}:00 UTC`;

const CSS = `
:root{--ok:#1f9d55;--warn:#d69e2e;--bad:#e3342f;--none:#b8c2cc;--ink:#1a202c;--muted:#606f7b;--line:#e2e8f0}
*{box-sizing:border-box}body{margin:0;font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--ink);background:#f7fafc}
main{max-width:1040px;margin:0 auto;padding:24px 16px 48px}h1{font-size:22px;margin:0 0 16px}h2{font-size:17px;margin:28px 0 10px}
.banner{border-radius:8px;padding:16px 20px;color:#fff;font-size:18px;font-weight:600}
.banner.ok{background:var(--ok)}.banner.warn{background:var(--warn)}.banner.bad{background:var(--bad)}.banner.none{background:var(--none)}
.figures{display:flex;flex-wrap:wrap;gap:12px;margin:14px 0}.figure{background:#fff;border:1px solid var(--line);border-radius:8px;padding:10px 14px;min-width:150px}
.figure b{display:block;font-size:20px}.figure span{color:var(--muted);font-size:13px}
.card{background:#fff;border:1px solid var(--line);border-radius:8px}.row{padding:12px 16px;border-top:1px solid var(--line)}.row:first-child{border-top:0}
.head{display:flex;flex-wrap:wrap;align-items:center;gap:8px 14px}.name{font-weight:600}.meta{color:var(--muted);font-size:13px}
.pill{display:inline-block;border-radius:999px;padding:1px 10px;font-size:12px;font-weight:600;color:#fff;text-transform:capitalize}
.pill.ok{background:var(--ok)}.pill.warn{background:var(--warn)}.pill.bad{background:var(--bad)}.pill.none{background:var(--none)}
.bars{display:flex;gap:2px;margin-top:8px;height:28px}.bar{flex:1;border-radius:2px}
.bar.up{background:var(--ok)}.bar.warn{background:var(--warn)}.bar.down{background:var(--bad)}.bar.none{background:var(--none);opacity:.5}
.scale{display:flex;justify-content:space-between;color:var(--muted);font-size:12px;margin-top:2px}
.empty{padding:16px;color:var(--muted)}footer{margin-top:28px;color:var(--muted);font-size:13px}`;

export function renderStatusPage(d: PageData): string {
  const o = d.overview;
  const providers = d.providers.length ? d.providers.map((p) => `<div class="row" data-provider="${esc(p.provider)}" data-gateway="${esc(p.gateway)}" data-status="${esc(p.status)}">
  <div class="head"><span class="name">${esc(p.provider)}</span><span class="meta">via ${esc(p.gateway)}</span>${pill(p.status)}
  <span class="meta">${p.healthy_models}/${p.total_models} models healthy · 24 h uptime ${pct(p.uptime_percentage)} · ${ms(p.avg_response_time_ms)}</span></div>
  ${bars(p.bars, d.firstDay, 86_400_000, day)}<div class="scale"><span>30 days ago</span><span>today</span></div></div>`).join('\n')
    : '<div class="empty">No health data yet.</div>';
  const models = d.models.length ? d.models.map((m) => `<div class="row" data-model="${esc(m.model_id)}" data-gateway="${esc(m.gateway)}" data-status="${esc(m.status)}">
  <div class="head"><span class="name">${esc(m.model_id)}</span><span class="meta">via ${esc(m.gateway)} · ${esc(m.tier)}</span>${pill(m.status)}
  <span class="meta">24 h uptime ${pct(m.uptime_percentage)} · ${ms(m.avg_response_time_ms)}</span></div>
  ${bars(m.bars, d.firstHour, 3_600_000, hour)}<div class="scale"><span>24 hours ago</span><span>now</span></div></div>`).join('\n')
    : '<div class="empty">No models tracked yet.</div>';
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<meta http-equiv="refresh" content="60"><link rel="icon" href="data:,"><title>Status · Model Gateway</title><style>${CSS}</style></head>
<body><main>
<h1>Model Gateway status</h1>
<div class="banner ${TONE[o.status] ?? 'none'}" id="overall" data-status="${esc(o.status)}">${esc(o.message)}</div>
<div class="figures">
  <div class="figure" id="uptime"><b>${pct(o.uptime_percentage)}</b><span>uptime, last 24 h</span></div>
  <div class="figure" id="providers-up"><b>${o.operational_providers} / ${o.total_providers}</b><span>providers operational</span></div>
  <div class="figure" id="models-healthy"><b>${o.healthy_models} / ${o.total_models}</b><span>models healthy</span></div>
  <div class="figure" id="requests"><b>${o.requests_last_24h.toLocaleString('en-US')}</b><span>requests, last 24 h</span></div>
  <div class="figure" id="latency"><b>${ms(o.avg_response_time_ms)}</b><span>average response time</span></div>
</div>
<h2>Providers</h2><section class="card" id="provider-list">${providers}</section>
<h2>Models</h2><section class="card" id="model-list">${models}</section>
<footer>Updated ${esc(o.last_updated)} · bars: green ≥ 99 % uptime, amber ≥ 95 %, red below, grey no calls ·
uptime counts 5-minute buckets with at least 80 % successful calls · <a href="/v1/status/">JSON</a></footer>
</main></body></html>`;
}
