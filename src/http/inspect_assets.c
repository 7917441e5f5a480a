/*
 * inspect_assets.c -- the inspector's two static files, built into the
 * binary: the style sheet and the one script. No framework, no build step,
 * no request to anything but this origin (the pages' CSP forbids it).
 *
 * The script makes a task page live. It follows the task's SSE stream
 * (GET /inspect/api/stream/ID: SubscribeToTask as the signed-in principal,
 * resumed after the last event id it saw with Last-Event-ID) and, after
 * each event, fetches the page again and swaps in its <main id="live">: the
 * server draws every view, the script draws none. It holds no token: the
 * HttpOnly session cookie goes with its requests. A stream that breaks is
 * reopened (backoff up to 10 s) until the page says the task is finished.
 */
#include "http/inspect.h"

const char once__inspect_js[] =
    "'use strict';\n"
    "(function () {\n"
    "  const body = document.body;\n"
    "  const task = body.dataset.task;\n"
    "  if (!task || body.dataset.live !== '1') return;\n"
    "  let last = body.dataset.generation || '0';\n"
    "  let delay = 250;\n"
    "  async function refresh() {\n"
    "    const r = await fetch(location.pathname, {cache: 'no-store'});\n"
    "    if (!r.ok) return false;\n"
    "    const doc = new DOMParser().parseFromString(await r.text(), 'text/html');\n"
    "    const fresh = doc.getElementById('live');\n"
    "    const now = document.getElementById('live');\n"
    "    if (fresh && now) now.replaceWith(document.adoptNode(fresh));\n"
    "    body.dataset.generation = doc.body.dataset.generation || body.dataset.generation;\n"
    "    body.dataset.live = doc.body.dataset.live || '0';\n"
    "    return body.dataset.live === '1';\n"
    "  }\n"
    "  async function follow() {\n"
    "    const res = await fetch('/inspect/api/stream/' + encodeURIComponent(task),\n"
    "                            {cache: 'no-store', headers: {'Last-Event-ID': last}});\n"
    "    const type = res.headers.get('Content-Type') || '';\n"
    "    if (!res.ok || !type.startsWith('text/event-stream')) return;\n"
    "    const reader = res.body.getReader();\n"
    "    const dec = new TextDecoder();\n"
    "    let buf = '';\n"
    "    for (;;) {\n"
    "      const {value, done} = await reader.read();\n"
    "      if (done) return;\n"
    "      buf += dec.decode(value, {stream: true}).replace(/\\r\\n?/g, '\\n');\n"
    "      let end;\n"
    "      while ((end = buf.indexOf('\\n\\n')) >= 0) {\n"
    "        const frame = buf.slice(0, end);\n"
    "        buf = buf.slice(end + 2);\n"
    "        let id = null;\n"
    "        for (const line of frame.split('\\n'))\n"
    "          if (line.startsWith('id:')) id = line.slice(3).trim();\n"
    "        if (id !== null) {\n"
    "          last = id;\n"
    "          delay = 250;\n"
    "          await refresh();\n"
    "        }\n"
    "      }\n"
    "    }\n"
    "  }\n"
    "  async function run() {\n"
    "    for (;;) {\n"
    "      try { await follow(); } catch (e) { /* the stream broke: resume below */ }\n"
    "      let more = true;\n"
    "      try { more = await refresh(); } catch (e) { /* try again */ }\n"
    "      if (!more) return;\n"
    "      await new Promise((r) => setTimeout(r, delay));\n"
    "      delay = Math.min(delay * 2, 10000);\n"
    "    }\n"
    "  }\n"
    "  run();\n"
    "})();\n";

const char once__inspect_css[] =
    "body { font: 14px/1.45 system-ui, sans-serif; margin: 0; color: #1d2125; "
    "background: #fafbfc; }\n"
    "header { background: #22313f; color: #fff; padding: .6em 1.2em; }\n"
    "header a { color: #fff; margin-right: 1em; }\n"
    "header .home { font-weight: 600; text-decoration: none; }\n"
    "header .who { opacity: .8; margin-right: 1em; }\n"
    "main { padding: 1em 1.2em 2em; max-width: 78em; }\n"
    "h1 { font-size: 1.35em; } h2 { font-size: 1.1em; margin-top: 1.6em; }\n"
    "table { border-collapse: collapse; width: 100%; background: #fff; }\n"
    "th, td { text-align: left; padding: .3em .6em; border-bottom: 1px solid #e3e6ea; "
    "vertical-align: top; }\n"
    "table.facts { width: auto; } table.facts th { font-weight: 500; color: #55606b; }\n"
    "code { font: 12.5px ui-monospace, monospace; }\n"
    ".state { display: inline-block; padding: 0 .5em; border-radius: .6em; font-size: .85em; "
    "background: #e3e6ea; }\n"
    ".s-completed { background: #d3f2dc; } .s-failed, .s-rejected { background: #f8d7da; }\n"
    ".s-working, .s-submitted { background: #dbe9fb; }\n"
    ".s-input-required, .s-auth-required { background: #fff0c2; }\n"
    ".s-canceled, .s-expired { background: #e6e0f3; }\n"
    ".expired { background: #efe9fa; border-left: 4px solid #7b5bc4; padding: .6em 1em; }\n"
    ".error { color: #a4161a; }\n"
    "tr.k-deadline td, tr.k-expired td { color: #5a4a8a; }\n"
    ".filter { margin: .5em 0 1em; } .filter input { width: 14em; }\n"
    ".hint { color: #55606b; font-size: .85em; }\n";
