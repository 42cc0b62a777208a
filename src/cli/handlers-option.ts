/** `--handlers MODULE`, shared by the commands that load the handler registry. */
export const HANDLERS_OPTION = { handlers: { type: 'string' } } as const;

export const HANDLERS_HELP = `  --handlers MODULE  the handler registry to use: a module exporting \`handlers\` (or a default
                     export) like handlers/index.ts (default: this project's handlers/index.ts)`;
