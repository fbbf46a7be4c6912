/**
 * An approval question as a VS Code toast. The server's text holds the
 * question, then the first lines of the diff: a toast shows it as one
 * paragraph, so only the question is kept (Review shows the diff). Its
 * button titles are long (`Allow always: edit_file(calc.py)`): a toast
 * cuts each to a few letters, so each gets a short label and the message
 * says what the less obvious ones do. No `vscode` import: the unit tests
 * run it under plain Node.
 */

/** A button the server offered (its title is what it reads back). */
export type Action = { title: string };

export type ApprovalToast<T extends Action> = {
  message: string;
  labels: string[];
  /** The server's action for each label; 'review' opens the diff editor instead. */
  answers: Map<string, T | 'review'>;
};

const ALWAYS = 'Allow always: ';

export function shortApproval<T extends Action>(text: string, actions: T[], canReview: boolean): ApprovalToast<T> {
  const answers = new Map<string, T | 'review'>();
  let rule: string | undefined;
  for (const action of actions) {
    if (action.title === 'Allow once') answers.set('Allow', action);
    else if (action.title === 'Allow for session') answers.set('Session', action);
    else if (action.title.startsWith(ALWAYS)) {
      answers.set('Always', action);
      rule = action.title.slice(ALWAYS.length);
    } else if (action.title === 'Reject') answers.set('Reject', action);
    else if (action.title === 'Show diff') answers.set('Review', canReview ? 'review' : action);
    else answers.set(action.title, action);
  }
  const question = text.split('\n\n')[0];
  const help = [
    answers.has('Session') ? 'Session: allow it for this session' : '',
    rule ? `Always: save the rule ${rule}` : '',
    answers.has('Review') ? 'Review: see the diff' : '',
  ].filter(Boolean);
  return {
    message: help.length > 0 ? `${question} ${help.join(' · ')}.` : question,
    labels: [...answers.keys()],
    answers,
  };
}
