"""A sweep's labels show what differs between jobs, readable: values unquoted, a file by its name, a URL by its
host:port (never its password), whole again where shortening would make two jobs read the same."""

from __future__ import annotations

from judgebias.core.overrides import readable, readable_jobs, unescaped


def test_values_as_typed_read_unquoted() -> None:
    assert unescaped("'hi, there'") == "hi, there"
    assert unescaped('"say \\"x\\""') == 'say "x"'
    assert unescaped("a\\,b") == "a,b"
    assert readable("rubric.system='be brief'") == "rubric.system=be brief"


def test_a_file_by_its_name_and_a_url_by_host_and_port() -> None:
    assert readable("data.path=/home/you/data/pairs_v2.csv") == "data.path=pairs_v2.csv"
    assert readable("judge.base_url=http://user:secret@10.0.0.5:8001/v1") == "judge.base_url=10.0.0.5:8001"
    assert readable("judge.model=org/model-7b") == "judge.model=org/model-7b"  # not a path: kept whole
    assert readable("-m") == "-m"


def test_shortening_that_would_hide_the_difference_is_not_done() -> None:
    jobs = [["data.path=/runs/a/pairs.csv", "judge=x"], ["data.path=/runs/b/pairs.csv", "judge=y"]]
    assert readable_jobs(jobs) == [
        ["data.path=/runs/a/pairs.csv", "judge=x"],
        ["data.path=/runs/b/pairs.csv", "judge=y"],
    ]
    hosts = [["judge.base_url=http://h:1/v1"], ["judge.base_url=http://h:1/v2"]]
    assert readable_jobs(hosts) == [["judge.base_url=http://h:1/v1"], ["judge.base_url=http://h:1/v2"]]
    files = [["data.path=/x/one.csv"], ["data.path=/x/two.csv"]]
    assert readable_jobs(files) == [["data.path=one.csv"], ["data.path=two.csv"]]
