/**
 * The server's stderr, as the output channel shows it: each line at the
 * level `tracing` wrote it with (not all at `error`, as the language
 * client's default does), and the last lines kept to say why the server
 * stopped. No `vscode` import: the unit tests run it under plain Node.
 */

export type Level = 'trace' | 'debug' | 'info' | 'warn' | 'error';

/** How many of the server's last stderr lines an error quotes. */
const TAIL_LINES = 12;

/** `2026-12-02T07:42:41.123456Z  INFO message`, as tracing's fmt writes it without colour. */
const TRACING_LINE = /^\d{4}-\d\d-\d\dT\S+\s+(TRACE|DEBUG|INFO|WARN|ERROR)\s+(.*)$/;

export class ServerLog {
  /** A line without a level (a continuation) keeps the previous one's. */
  private level: Level = 'error';
  private readonly lines: string[] = [];

  /** The line's level and its text without the timestamp (the channel adds its own). */
  line(raw: string): { level: Level; text: string } {
    const m = TRACING_LINE.exec(raw);
    let text = raw;
    if (m) {
      this.level = m[1].toLowerCase() as Level;
      text = m[2];
    } else if (raw.trim() === '') {
      return { level: this.level, text };
    }
    this.lines.push(text);
    if (this.lines.length > TAIL_LINES) this.lines.shift();
    return { level: this.level, text };
  }

  /** The last lines, quoted for an error message. */
  tail(): string[] {
    return [...this.lines];
  }

  /** A new process: its lines start at `error` until one says otherwise. */
  reset(): void {
    this.level = 'error';
    this.lines.length = 0;
  }
}

/** Why the server is not running, in a sentence and the stderr lines that say more. */
export function exitReason(code: number | null, signal: string | null, tail: string[]): string {
  const how = signal ? `was killed by ${signal}` : `exited with code ${code ?? '?'}`;
  const said = tail.length > 0 ? `; it said:\n${tail.join('\n')}` : ' without a word on stderr';
  return `the server ${how}${said}`;
}
