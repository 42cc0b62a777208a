/**
 * The names the spec leaves out ("not shown"), taken from configuration: the list route's three
 * query parameters and the property of the action body. docs/pods-client.md lists every such
 * assumption; the emulator (`podhook emulate`) reads the same defaults.
 */
export interface PodsWireNames {
  /** The page-size query parameter of `GET /pods/v1/pods` (`SVC_LIST_PAGE_SIZE_PARAM`). */
  pageSizeParam: string;
  /** The cursor query parameter (`SVC_LIST_CURSOR_PARAM`). */
  cursorParam: string;
  /** The `external_ref` filter's query parameter (`SVC_LIST_EXTERNAL_REF_PARAM`). */
  externalRefParam: string;
  /** The body property that names the action of `POST /pods/v1/pods/{id}/actions` (`SVC_ACTION_BODY_PROPERTY`). */
  actionProperty: string;
}

export const DEFAULT_PODS_WIRE: PodsWireNames = {
  pageSizeParam: 'limit',
  cursorParam: 'cursor',
  externalRefParam: 'external_ref',
  actionProperty: 'action',
};
