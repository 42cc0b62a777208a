import { PodsError } from './pods-error.js';
import type { ListPodsQuery } from './pods-operations.js';
import type { PodsPage } from './pods-types.js';
import { pageRequestId } from './request-id.js';

/** The most pages one walk reads (`pages()`, `podhook pods`) unless told otherwise: 100,000 pods at 100 a page. */
export const DEFAULT_MAX_PAGES = 1_000;

export interface WalkPagesOptions {
  /** The first page's request id: page n sends `<id>.<n>`. Undefined: each page gets a fresh one. */
  requestId?: string;
  /** Default `DEFAULT_MAX_PAGES`. */
  maxPages?: number;
}

/**
 * Every page of the list in turn, from `query.cursor` (or the first) until `next_cursor` is null,
 * each read with `list`. A service whose pages never end cannot keep the walk (and the account's
 * read bucket) going: a cursor it gave before (c1, c2, c1, …), or a page past `maxPages`, ends the
 * walk with `unexpected_response` (`details.reason`: `cursor_repeated` or `page_limit`), after the
 * pages read so far were yielded.
 */
export async function* walkPages(
  list: (query: ListPodsQuery, requestId: string | undefined) => Promise<PodsPage>,
  query: ListPodsQuery = {},
  { requestId, maxPages = DEFAULT_MAX_PAGES }: WalkPagesOptions = {},
): AsyncGenerator<PodsPage, void, undefined> {
  const seen = new Set<string>();
  let cursor = query.cursor;
  if (cursor) seen.add(cursor);
  for (let page = 1; ; page++) {
    const id = requestId === undefined ? undefined : pageRequestId(requestId, page);
    const answer = await list({ ...query, cursor }, id);
    yield answer;
    const next = answer.next_cursor;
    if (next === null) return;
    const stop = (reason: 'cursor_repeated' | 'page_limit', message: string) =>
      new PodsError('unexpected_response', 200, message, { requestId: id ?? null, operation: 'list', details: { reason, pages: page } });
    if (seen.has(next)) throw stop('cursor_repeated', `the service's pages never end: page ${page} gave a next_cursor it gave before, so the walk stopped there`);
    if (page >= maxPages) throw stop('page_limit', `the walk stopped after ${maxPages} pages (its limit) with more to read: pass a larger maxPages or pageSize`);
    seen.add(next);
    cursor = next;
  }
}
