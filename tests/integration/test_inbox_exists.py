"""The inbox the README tells people to copy into exists after an ingest (CLI) and for Dagster."""

from speakerflow.pipelines.resources import HomeStore


def test_inbox_exists_after_a_cli_ingest(tmp_path, ingest_sample):
    home = tmp_path / "home"
    assert ingest_sample(str(home)) == 0
    assert (home / "inbox").is_dir()


def test_inbox_exists_once_the_sensor_asks_for_it(tmp_path):
    home = tmp_path / "fresh"
    inbox = HomeStore(home=str(home)).inbox()
    assert inbox == (home / "inbox").resolve() and inbox.is_dir()
