/**
 * The effort quick pick: `bareagent.setEffort` lists the levels and what the
 * next turn uses; the pick goes back to it (the session's choice, over the
 * settings, until "Back to the settings").
 */
import * as vscode from 'vscode';
import type { Agent } from './agent';

type Reasoning = { effort?: string | null; thinking?: string; wire?: string | null };
type EffortChoices = { current?: Reasoning; efforts?: string[]; thinking?: string[] };

export async function pickEffort(agent: Agent): Promise<void> {
  const answer = await agent.run<EffortChoices>('bareagent.setEffort');
  const now = answer.current ?? {};
  const items: (vscode.QuickPickItem & { pick: object })[] = [
    ...(answer.efforts ?? []).map((effort) => ({
      label: `effort ${effort}`,
      picked: effort === now.effort,
      pick: { effort },
    })),
    ...(answer.thinking ?? []).map((thinking) => ({
      label: `thinking ${thinking}`,
      picked: thinking === now.thinking,
      pick: { thinking },
    })),
    { label: 'Back to the settings', pick: { effort: 'default' } },
  ];
  const picked = await vscode.window.showQuickPick(items, {
    placeHolder: `Effort for the next turn (now ${now.effort ?? 'the model\'s default'}, thinking ${now.thinking ?? '?'}${now.wire ? `, ${now.wire} API` : ''})`,
  });
  if (!picked) return;
  await agent.run('bareagent.setEffort', picked.pick);
}
