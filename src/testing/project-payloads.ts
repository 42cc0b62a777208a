// The project's generated payload module (handlers/_payloads.ts, from `podhook schemas`), the one
// place the test kit reads it: testEvent builds its payloads from the shapes learned there.
import type { PayloadShapes } from '../core/shapes/shape.js';
import { PAYLOAD_SHAPES } from '../../handlers/_payloads.js';

/** The shapes the project learned (widened: a module learned from few samples may have none). */
export const projectShapes: PayloadShapes = PAYLOAD_SHAPES;
