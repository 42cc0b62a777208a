/**
 * A failed call to the service. One error serves every client of the service (`podhook register`
 * and the pod client): `ServiceError` is `PodsError` under the name `podhook register` has always used.
 */
export { PodsError as ServiceError, type PodsErrorCode as ServiceErrorCode } from '../core/pods/pods-error.js';
