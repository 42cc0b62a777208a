import type { Context } from 'hono';
import type { Child } from 'hono/jsx';
import type { AdminEnv } from '../admin-env.js';
import { CsrfField } from './csrf-form.js';
import { INSPECTOR_CSS } from './inspector-style.js';

/** Every page's shell: the style sheet under the CSP nonce, the navigation, and Log out for a cookie session. */
export function Layout({ c, title, children }: { c: Context<AdminEnv>; title: string; children: Child }) {
  return (
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <meta name="referrer" content="no-referrer" />
        <title>{title} · podhook</title>
        <style nonce={c.get('secureHeadersNonce')}>{INSPECTOR_CSS}</style>
      </head>
      <body>
        <header>
          <nav>
            <a class="brand" href="/_podhook/">podhook</a>
            {c.get('adminAuth') ? <><a href="/_podhook/">Deliveries</a> <a href="/_podhook/backfills">Backfills</a></> : null}
          </nav>
          {c.get('adminAuth') === 'cookie' ? (
            <form method="post" action="/_podhook/logout" class="inline">
              <CsrfField c={c} />
              <button type="submit" class="link">Log out</button>
            </form>
          ) : null}
        </header>
        <main>{children}</main>
      </body>
    </html>
  );
}
