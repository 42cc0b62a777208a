import type { SecureHeadersVariables } from 'hono/secure-headers';

/** The admin routes' context: how the request was authenticated, and the request id. */
export type AdminEnv = {
  /** What `createApp` hands over when it forwards a request to the admin app. */
  Bindings: { requestId?: string };
  Variables: SecureHeadersVariables & {
    requestId: string;
    adminAuth: 'bearer' | 'cookie';
    /** The session cookie's signed value (cookie-authenticated requests). */
    adminSession: string;
    /** This session's CSRF form field, for the pages' forms. */
    csrfField: string;
  };
};
