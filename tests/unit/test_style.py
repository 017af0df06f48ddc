"""Markdown features of answers and their plain-text rendering (style.py)."""

from __future__ import annotations

from judgebias.core.style import FEATURES, Style, strip_markdown, style_of

# Answers in the shapes judged answers take (the shared MT-Bench and PandaLM sets have each of these).
CODE_ANSWER = """Here's the modified program using the `multiprocessing` module:

```python
import os
from collections import Counter

def top_words(**kwargs):
    # Count the words of every file
    counts = Counter()
    return counts.most_common(5)

# Example usage
print(top_words(path="docs"))  # **not bold**
```

The main difference is that files are read in **parallel**."""

RICH_ANSWER = """## Saving electricity

Here are *five* simple habits:

1. **Switch off** lights when leaving a room.
2. Unplug chargers:
   - phones
   - laptops
3. Use __LED__ bulbs.

### Summary

| Habit | Saving |
|---|---:|
| Lights | 10% |
| Chargers | 2% |

> Every _watt_ counts.

---

Read more at [the guide](https://example.org/energy)."""

PLAIN_ANSWER = """The capital of France is Paris. It has been the capital since 987, apart from a few short periods.
Paris is also the largest city of France, with about 2.1 million inhabitants in the city proper."""


def test_plain_prose_has_no_features() -> None:
    """An answer of plain sentences counts zero of every feature."""
    assert Style() == style_of(PLAIN_ANSWER)


def test_every_feature_of_a_formatted_answer_is_counted() -> None:
    """Headers, nested list items, bold, italic and tables of a typical formatted answer are each counted."""
    expected = Style(headers=2, list_items=5, bold=2, italic=2, code_blocks=0, tables=1)
    assert expected == style_of(RICH_ANSWER)


def test_markdown_inside_a_code_block_is_not_formatting() -> None:
    """A `# comment` line, `**kwargs` and `**x**` inside a fenced block count as one code block, nothing else."""
    expected = Style(code_blocks=1, bold=1)  # the one bold is "**parallel**" after the block
    assert expected == style_of(CODE_ANSWER)


def test_inline_code_spans_and_escapes_are_not_emphasis() -> None:
    """`**ptr` in backticks, `a_b_c` identifiers and escaped \\*stars\\* are no bold or italic."""
    text = "Call `f(**opts)` or `*ptr*`, set snake_case_name and write \\*literally\\* stars."
    assert Style() == style_of(text)


def test_arithmetic_and_thematic_breaks_are_not_lists_or_emphasis() -> None:
    """`2 * 3 * 4`, a `* * *` break and a `---` rule after a blank line are neither items, emphasis nor headers."""
    text = "Compute 2 * 3 * 4 first.\n\n* * *\n\nThen add one.\n\n---\n\nDone."
    assert Style() == style_of(text)


def test_setext_headings_and_bold_italic_spans() -> None:
    """A title underlined with === or --- is a header; ***both*** is one bold and one italic span."""
    text = "Overview\n========\n\nThis is ***important***.\n\nDetails\n-------\nMore."
    assert Style(headers=2, bold=1, italic=1) == style_of(text)


def test_an_unclosed_fence_runs_to_the_end_and_indented_fences_count() -> None:
    """A fence indented inside a list item is a code block; a fence never closed hides the rest as code."""
    text = "1. Install:\n    ```bash\n    pip install x  # **no**\n    ```\n2. Run:\n```\n# not a header\n- not an item"
    assert Style(list_items=2, code_blocks=2) == style_of(text)


def test_pipes_without_a_delimiter_row_are_no_table() -> None:
    """Text with `|` characters is only a table when a `---|---` delimiter row follows its first row."""
    assert Style() == style_of("Use a | b for union, or x | y.\nNothing else.")
    assert Style(tables=1) == style_of("| Season | Game |\n| --- | --- |\n| 2011 | Ravens vs. Texans | 23-14")


def test_style_as_dict_uses_the_contract_field_names() -> None:
    """The verdicts.jsonl object has exactly the six contract keys, in order, with integer counts."""
    expected = {"headers": 2, "list_items": 5, "bold": 2, "italic": 2, "code_blocks": 0, "tables": 1}
    assert expected == style_of(RICH_ANSWER).as_dict()
    assert FEATURES == tuple(style_of(RICH_ANSWER).as_dict())


def test_strip_markdown_renders_a_formatted_answer_as_plain_text() -> None:
    """Markup goes, every word, cell and link target stays, one list item per line."""
    expected = """Saving electricity

Here are five simple habits:

Switch off lights when leaving a room.
Unplug chargers:
phones
laptops
Use LED bulbs.

Summary

Habit | Saving
Lights | 10%
Chargers | 2%

Every watt counts.

Read more at the guide (https://example.org/energy)."""
    assert expected == strip_markdown(RICH_ANSWER)


def test_stripped_prose_has_no_features_left() -> None:
    """After strip_markdown a formatted prose answer counts zero of every feature."""
    assert Style() == style_of(strip_markdown(RICH_ANSWER))


def test_strip_markdown_keeps_code_verbatim_without_fences() -> None:
    """Code lines survive character for character (comments, `**kwargs`); only the fence lines go."""
    stripped = strip_markdown(CODE_ANSWER)
    code = CODE_ANSWER.split("```python\n")[1].split("\n```")[0]
    assert code in stripped
    assert "```" not in stripped
    assert stripped.endswith("The main difference is that files are read in parallel.")
    assert stripped.startswith("Here's the modified program using the multiprocessing module:")


def test_strip_markdown_leaves_plain_text_alone() -> None:
    """An answer without markup comes back unchanged."""
    assert PLAIN_ANSWER == strip_markdown(PLAIN_ANSWER)
