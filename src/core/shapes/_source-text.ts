/** Indents every line but the first by two spaces (a nested block's text inside its parent). */
export const indent = (text: string): string => text.replaceAll('\n', '\n  ');

const IDENTIFIER = /^[A-Za-z_$][\w$]*$/;

/** Whether a key can be written bare: `status`, not `"content-type"`. */
export const isIdentifier = (key: string): boolean => IDENTIFIER.test(key);

/**
 * A key as written in an object literal or type: bare when an identifier, else quoted.
 * `__proto__` is written computed (`["__proto__"]`): in an object literal the bare or quoted key
 * would set the prototype instead of defining a field.
 */
export function propertyKey(key: string): string {
  if (key === '__proto__') return '["__proto__"]';
  return isIdentifier(key) ? key : JSON.stringify(key);
}
