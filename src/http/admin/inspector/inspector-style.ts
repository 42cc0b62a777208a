/** The inspector's one style sheet, inlined under the CSP nonce (no external assets). */
export const INSPECTOR_CSS = `
:root { color-scheme: light dark; --fg: #1d2430; --muted: #667085; --bg: #fff; --line: #d8dde6; --soft: #f3f5f8;
  --ok: #2f9e61; --warn: #d98e04; --bad: #d63c3c; --info: #3b7dd8; --idle: #98a2b3; --odd: #8a4fd0; }
@media (prefers-color-scheme: dark) { :root { --fg: #e6e9ef; --muted: #98a2b3; --bg: #12161d; --line: #2c3440; --soft: #1b212b; } }
* { box-sizing: border-box; }
body { margin: 0; font: 15px/1.45 -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, "Noto Sans", "DejaVu Sans", sans-serif; color: var(--fg); background: var(--bg); }
header { display: flex; justify-content: space-between; align-items: center; padding: .6rem 1rem; border-bottom: 1px solid var(--line); }
.brand { font-weight: 700; text-decoration: none; color: var(--fg); }
main { max-width: 64rem; margin: 0 auto; padding: 0 1rem 3rem; }
h1 { font-size: 1.35rem; margin: 1.2rem 0 .6rem; display: flex; gap: .5rem; align-items: center; flex-wrap: wrap; }
h2 { font-size: 1.05rem; margin: 1.4rem 0 .5rem; }
a { color: var(--info); }
code, pre { font: 13px/1.4 ui-monospace, SFMono-Regular, Menlo, monospace; }
pre.body { background: var(--soft); padding: .8rem; border-radius: 6px; overflow-x: auto; white-space: pre-wrap; word-break: break-word; }
.banner { padding: .6rem .8rem; border-radius: 6px; margin: .8rem 0; }
.banner.dead { background: color-mix(in srgb, var(--bad) 14%, var(--bg)); border: 1px solid var(--bad); }
.banner.down { background: color-mix(in srgb, var(--warn) 16%, var(--bg)); border: 1px solid var(--warn); }
.notice { padding: .5rem .8rem; border-radius: 6px; background: color-mix(in srgb, var(--ok) 14%, var(--bg)); border: 1px solid var(--ok); }
.filters { display: flex; flex-wrap: wrap; gap: .5rem; align-items: flex-end; margin-bottom: .8rem; }
.filters label { display: flex; flex-direction: column; font-size: .8rem; color: var(--muted); flex: 1 1 9rem; }
input, select, button { font: inherit; padding: .4rem .5rem; border: 1px solid var(--line); border-radius: 6px; background: var(--bg); color: var(--fg); min-height: 2.3rem; }
button, .button { cursor: pointer; background: var(--soft); text-decoration: none; color: var(--fg); padding: .45rem .8rem; border: 1px solid var(--line); border-radius: 6px; display: inline-block; }
button.primary { background: var(--info); color: #fff; border-color: var(--info); }
button.link { border: 0; background: none; color: var(--info); padding: 0; min-height: 0; }
form.inline { display: inline; }
form.login { display: flex; flex-direction: column; gap: .6rem; max-width: 22rem; }
form.login label { display: flex; flex-direction: column; gap: .2rem; }
ul.deliveries { list-style: none; padding: 0; margin: 0; border-top: 1px solid var(--line); }
ul.deliveries a { display: grid; grid-template-columns: auto 1fr auto; gap: .2rem .6rem; padding: .55rem .2rem; border-bottom: 1px solid var(--line); text-decoration: none; color: var(--fg); align-items: center; }
ul.deliveries a:hover { background: var(--soft); }
ul.deliveries .id { grid-column: 1 / -1; color: var(--muted); font-size: 12px; overflow-wrap: anywhere; }
ul.deliveries .err { grid-column: 1 / -1; }
ul.deliveries time { color: var(--muted); font-size: .85rem; }
.type { font-weight: 600; min-width: 0; }
.badge { display: inline-block; font-size: .75rem; font-weight: 600; padding: .1rem .45rem; border-radius: 99px; color: #fff; background: var(--idle); }
.s-processed, .s-succeeded { background: var(--ok); } .s-failed, .s-timeout { background: var(--warn); } .s-invalid_payload { background: var(--bad); } .s-skipped { background: var(--idle); } .s-dead { background: var(--bad); } .s-queued { background: var(--info); } .s-quarantined { background: var(--odd); }
.badge.drift { background: none; color: var(--warn); border: 1px solid var(--warn); vertical-align: 1px; }
section.drift { margin-bottom: 1.2rem; }
.err { color: var(--bad); font-size: .85rem; overflow-wrap: anywhere; }
.muted, .small { color: var(--muted); font-size: .85rem; font-weight: normal; }
.empty { color: var(--muted); }
.scroll { overflow-x: auto; }
table { border-collapse: collapse; width: 100%; font-size: .9rem; }
th, td { text-align: left; padding: .35rem .5rem; border-bottom: 1px solid var(--line); vertical-align: top; }
td code { overflow-wrap: anywhere; }
.num { text-align: right; white-space: nowrap; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: .3rem 1rem; margin: .5rem 0 1rem; }
dl.facts dt { color: var(--muted); }
dl.facts dd { margin: 0; overflow-wrap: anywhere; }
.ladder { display: block; }
figure.chart { margin: 0 0 .8rem; }
figure.chart svg { width: 100%; height: 8rem; display: block; background: var(--soft); border-radius: 6px; }
.axis { stroke: var(--line); }
.ticks { display: flex; justify-content: space-between; font-size: .75rem; color: var(--muted); }
.o-processed { fill: var(--ok); } .o-ignored { fill: var(--idle); } .o-queued { fill: var(--info); } .o-failed { fill: var(--warn); } .o-dead { fill: var(--bad); } .o-quarantined { fill: var(--odd); }
figcaption { display: flex; flex-wrap: wrap; gap: .3rem .8rem; font-size: .8rem; margin-top: .3rem; }
.key::before { content: ""; display: inline-block; width: .7rem; height: .7rem; margin-right: .3rem; border-radius: 2px; background: currentColor; vertical-align: -1px; }
.key.o-processed { color: var(--ok); } .key.o-ignored { color: var(--idle); } .key.o-queued { color: var(--info); } .key.o-failed { color: var(--warn); } .key.o-dead { color: var(--bad); } .key.o-quarantined { color: var(--odd); }
header form { margin: 0; }
header nav { display: flex; gap: .9rem; align-items: baseline; flex-wrap: wrap; }
.s-parked, .s-sleeping { background: #6d72c3; } .s-interrupted { background: var(--idle); }
tr.steps > td { background: var(--soft); }
table.steps { font-size: .85rem; margin: .2rem 0 .3rem; }
table.steps th, table.steps td { padding: .2rem .4rem; }
td.sealed { font-style: italic; color: var(--muted); }
p.parked { margin: .2rem 0 .4rem; }
label.fresh { margin-left: .6rem; font-size: .9rem; white-space: nowrap; }
label.fresh input { min-height: 0; vertical-align: middle; margin: 0 .2rem 0 0; }
.s-running { background: var(--info); } .s-done { background: var(--ok); } .s-cancelled { background: var(--idle); }
section.backfill { border: 1px solid var(--line); border-radius: 6px; padding: 0 .9rem .8rem; margin: .8rem 0; }
section.backfill h2 { display: flex; gap: .5rem; align-items: center; }
p.bar { display: flex; gap: .8rem; align-items: center; margin: .4rem 0; }
progress { flex: 1; height: 1.1rem; accent-color: var(--info); }
p.bar .count { white-space: nowrap; font-variant-numeric: tabular-nums; }
@media (max-width: 40rem) { ul.deliveries a { grid-template-columns: auto 1fr; } ul.deliveries time { grid-column: 1 / -1; } }
/* On a phone each handler run is a small card: label and value per line, nothing to scroll sideways. */
@media (max-width: 40rem) {
  table.runs thead { display: none; }
  table.runs, table.runs tbody, table.runs tr, table.runs td { display: block; }
  table.runs tr { padding: .4rem 0; border-bottom: 1px solid var(--line); }
  table.runs td { border: 0; padding: .1rem 0; text-align: left; }
  table.runs td::before { content: attr(data-label); color: var(--muted); display: inline-block; min-width: 5.5rem; font-size: .85rem; }
  table.runs td:empty { display: none; }
}
@media (max-width: 40rem) { dl.facts { grid-template-columns: 1fr; } dl.facts dt { margin-top: .4rem; } }
`;
