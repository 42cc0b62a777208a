import { parseArgs, type ParseArgsConfig } from 'node:util';

/** Exit codes shared by every command (documented in `podhook --help`). */
export const EXIT = {
  ok: 0,
  /** The command ran and something failed (a request, a handler, the store). */
  failure: 1,
  /** Bad usage or configuration: nothing was done. */
  usage: 2,
} as const;

export type Options = NonNullable<ParseArgsConfig['options']>;

export interface CommandIo {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  env: Record<string, string | undefined>;
  stdin: NodeJS.ReadableStream;
  /** Whether stderr is a terminal: progress bars are drawn only there. */
  stderrIsTTY?: boolean;
  /** How a command waits (a rate limit's retry_after_seconds); tests pass one that moves a fake clock. */
  sleep?: (ms: number) => Promise<void>;
}

/** What `parseArgs` gives for these options (strict), so commands read typed values. */
export type ParsedArgs<O extends Options> = ReturnType<typeof parseArgs<{ options: O; allowPositionals: true; strict: true }>>;

/** A command's definition, typed by its options. */
export interface CommandDefinition<O extends Options> {
  name: string;
  summary: string;
  usage: string;
  /** Help text below the usage line: options, environment, exit codes. */
  help: string;
  options: O;
  /** Other spellings accepted for an option (not shown in help): alias → the option's name. */
  aliases?: Readonly<Record<string, keyof O & string>>;
  allowPositionals?: boolean;
  run(args: ParsedArgs<O>, io: CommandIo): Promise<number>;
}

/** A command as `main` sees it: its texts, and a parse-and-run of raw arguments. */
export interface Command {
  name: string;
  summary: string;
  usage: string;
  help: string;
  /** Parses `argv` (a UsageError when it does not fit), then prints help or runs the command. */
  invoke(argv: string[], io: CommandIo): Promise<number>;
}

/** Usage errors print one line and exit 2. */
export class UsageError extends Error {}

/** Types a command's options from its definition (as citty's `defineCommand`) and wires its parsing. */
export function defineCommand<O extends Options>(definition: CommandDefinition<O>): Command & CommandDefinition<O> {
  return {
    ...definition,
    async invoke(argv, io) {
      const { help, args } = parse(definition, argv);
      if (help) {
        io.stdout(helpText(definition));
        return EXIT.ok;
      }
      return definition.run(args, io);
    },
  };
}

function parse<O extends Options>(command: CommandDefinition<O>, argv: string[]): { help: boolean; args: ParsedArgs<O> } {
  const aliases = Object.entries(command.aliases ?? {});
  // Same type (and multiple) as the option; no short flag of its own.
  const aliasOptions = Object.fromEntries(aliases.map(([alias, name]) => [alias, (({ short: _short, ...rest }) => rest)(command.options[name]!)]));
  let parsed: { values: Record<string, unknown>; positionals: string[] };
  try {
    parsed = parseArgs({
      args: argv,
      options: { ...command.options, ...aliasOptions, help: { type: 'boolean', short: 'h' } },
      allowPositionals: command.allowPositionals ?? false,
      strict: true,
    });
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  const { help, ...values } = parsed.values;
  for (const [alias, name] of aliases) {
    if (values[alias] !== undefined) values[name] ??= values[alias];
    delete values[alias];
  }
  // parseArgs' result type cannot be resolved for a generic O here; each command sees its precise one.
  return { help: help === true, args: { values, positionals: parsed.positionals } as ParsedArgs<O> };
}

export function helpText(command: Pick<Command, 'summary' | 'usage' | 'help'>): string {
  return `${command.summary}\n\nUsage: ${command.usage}\n\n${command.help.trim()}\n`;
}
