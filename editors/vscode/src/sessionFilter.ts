/**
 * Which `bareagent/event`s belong to the conversation the view shows. After
 * New session, the old session's turn still ends (its `turn_failed`
 * "cancelled" arrives after the command's answer): turn ids are unique in
 * the server's process, so the turns seen before the clear are the
 * finished session's, and their events are dropped. No `vscode` import:
 * the unit tests run it under plain Node.
 */
import type { EditorEvent } from './editorEvent';

export const MAIN_SESSION = 'main';

export class CurrentSession {
  private seen = new Set<number>();
  private finished = new Set<number>();

  /** Whether the view (and the status bar) should show `event`. */
  accept(event: EditorEvent): boolean {
    // approval_resolved carries no session: it belongs to whichever asked.
    if ('session' in event && event.session !== MAIN_SESSION) return false;
    const turn = 'turn' in event ? event.turn : undefined;
    if (typeof turn !== 'number') return true;
    if (this.finished.has(turn)) return false;
    this.seen.add(turn);
    return true;
  }

  /** New session: every turn seen so far is the old session's. */
  finish(): void {
    for (const turn of this.seen) this.finished.add(turn);
    this.seen.clear();
  }
}
