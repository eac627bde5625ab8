"""User OHLCV files: validation errors name the file, the row and the problem."""

import pandas as pd
import pytest

from benchmark.market.data import DataError, load_ohlcv_files


def _write(tmp_path, name, rows, kind="csv"):
    path = tmp_path / name
    frame = pd.DataFrame(rows)
    if kind == "csv":
        frame.to_csv(path, index=False)
    else:
        frame.to_parquet(path)
    return path


def _rows(n=6, start="2026-01-05 00:00", step="1h", price=100.0):
    ts = pd.date_range(start, periods=n, freq=step, tz="UTC")
    return [dict(timestamp=t.isoformat(), open=price, high=price + 1, low=price - 1,
                 close=price + 0.5, volume=10) for t in ts]


def test_good_files_load_with_interval_and_gaps(tmp_path):
    rows = _rows(6)
    del rows[3]  # a one-bar hole
    btc = _write(tmp_path, "BTC.csv", rows)
    aapl = _write(tmp_path, "aapl.parquet", _rows(6), kind="parquet")
    loaded = load_ohlcv_files([btc, aapl])
    src = loaded.source
    assert src.bar_interval == pd.Timedelta(hours=1)
    assert src.universe.crypto == ("BTC",) and src.universe.us == ("AAPL",)
    assert [(g.symbol, g.missing_bars) for g in loaded.gaps] == [("BTC", 1)]
    assert src.bars("BTC")["close"].iloc[0] == 100.5


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda r: r[2].update(high=50.0), "row 4: BTC: high is below open or close"),
        (lambda r: r[1].update(low=200.0), "row 3: BTC: low is above open or close"),
        (lambda r: r[4].update(open=-1.0, low=-2.0), "row 6: BTC: prices must be positive"),
        (lambda r: r[0].update(volume=-5), "row 2: BTC: volume is negative"),
        (lambda r: r[3].update(timestamp=r[1]["timestamp"]), "row 5: timestamps of BTC are not strictly increasing"),
        (lambda r: r[2].update(close="abc"), "row 4: close is not a finite number"),
    ],
)
def test_bad_rows_are_named(tmp_path, mutate, message):
    rows = _rows(6)
    mutate(rows)
    path = _write(tmp_path, "BTC.csv", rows)
    with pytest.raises(DataError) as info:
        load_ohlcv_files([path])
    assert str(path) in str(info.value)
    assert message in str(info.value)


def test_missing_columns_and_files(tmp_path):
    path = _write(tmp_path, "ETH.csv", [{"timestamp": "2026-01-01", "close": 1.0}])
    with pytest.raises(DataError, match="missing column"):
        load_ohlcv_files([path])
    with pytest.raises(DataError, match="no such file"):
        load_ohlcv_files([tmp_path / "nope.csv"])
    bad = tmp_path / "x.txt"
    bad.write_text("hi")
    with pytest.raises(DataError, match="unsupported file type"):
        load_ohlcv_files([bad])


def test_interval_outside_range_rejected(tmp_path):
    path = _write(tmp_path, "BTC.csv", _rows(3, step="7D"))
    with pytest.raises(DataError, match="outside 1 min"):
        load_ohlcv_files([path])
