/**
 * What the model picker and the usage lines show, as data: no `vscode`
 * import, so the unit tests run it under plain Node.
 */

/** `bareagent.setModel`'s answer without an argument. */
export type Choices = {
  current?: { provider?: string; model?: string };
  choices?: { provider: string; model: string; configured: boolean }[];
  /** Whose list the provider in use's choices are: its API's, or the built-in one and why. */
  listedBy?: { provider?: string; source?: string; note?: string | null };
};

export type PickItem = { label: string; description?: string; detail?: string; picked?: boolean; pick?: object };

/**
 * The quick pick's items: every choice (the models the key can use, where
 * the API listed them), then why the list is the built-in one if it is,
 * and the way back to the settings.
 */
export function pickItems(answer: Choices): PickItem[] {
  const items: PickItem[] = (answer.choices ?? []).map((c) => ({
    label: `${c.provider} · ${c.model}`,
    description: c.configured ? undefined : 'not configured (no key or base URL)',
    picked: c.provider === answer.current?.provider && c.model === answer.current?.model,
    pick: { provider: c.provider, model: c.model },
  }));
  const note = answer.listedBy?.note;
  if (note) items.push({ label: 'The built-in list', detail: note });
  items.push({ label: 'Back to the settings', pick: { reset: true } });
  return items;
}

/** A usage total as the editors show it; the tokens spent thinking when the API counts them. */
export type Usage = { input_tokens?: number; output_tokens?: number; reasoning_tokens?: number };

export function usageText(t: Usage): string {
  const reasoning = t.reasoning_tokens ? ` (${t.reasoning_tokens} reasoning)` : '';
  return `${t.input_tokens ?? 0} in · ${t.output_tokens ?? 0} out${reasoning} tokens`;
}
