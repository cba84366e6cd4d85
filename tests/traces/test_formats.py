"""Each loader on its fixture (hand-checked values), detection, malformed input, and the real files."""

from __future__ import annotations

import glob
import json

import numpy as np
import pytest

from cosim.errors import InputError, UnknownNameError
from traces import load
from traces.formats import FORMATS, detect, load_with_report

EXPECTED_FORMAT = {
    "philly_cluster_job_log.json": "philly-json",
    "philly_derived_small.csv": "philly-csv",
    "helios_cluster_log.csv": "helios",
    "sensetime_poisson.json": "sensetime",
    "sensetime_april.json": "sensetime",
    "pollux_workload.csv": "pollux",
    "ones_trace.csv": "ones",
}


@pytest.mark.parametrize("name,fmt", sorted(EXPECTED_FORMAT.items()))
def test_detect_by_content(fixtures, tmp_path, name, fmt):
    assert detect(fixtures / name) == fmt
    renamed = tmp_path / "trace.dat"  # the name plays no part
    renamed.write_bytes((fixtures / name).read_bytes())
    assert detect(renamed) == fmt


def test_registry_lists_the_six_formats_and_parquet():
    assert set(FORMATS.names()) == {"parquet", "philly-json", "philly-csv", "helios", "sensetime", "pollux", "ones"}
    with pytest.raises(UnknownNameError, match="valid: helios, ones"):
        load_with_report("x", "nope")


def test_philly_json(fixtures):
    df, rep = load_with_report(fixtures / "philly_cluster_job_log.json")
    assert rep.rows_read == 7 and rep.rows_kept == 3
    assert rep.excluded == {"never_started": 1, "no_start_time": 1, "still_running": 1, "zero_gpus": 1}
    j = df.set_index("job_id")
    a = j.loc["application_1506638472019_14199"]
    # origin = earliest submitted_time 00:59:00; submitted 01:11:39; first start 01:12:09; last end 03:13:30
    assert (a.submit_time, a.start_time, a.end_time, a.duration) == (759.0, 789.0, 8070.0, 7281.0)
    assert a.num_gpus == 8 and a.status == "Pass" and a.vc == "ee9e8c" and a.user == "ce2f4c"
    b = j.loc["application_1506638472019_14205"]  # first attempt's end missing (logging error): span 04:00→06:00
    assert b.duration == 7200.0 and b.num_gpus == 2
    assert df.attrs["time_origin_s"] % 86400 == 59 * 60


def test_philly_csv(fixtures):
    df, rep = load_with_report(fixtures / "philly_derived_small.csv")
    assert rep.excluded == {"zero_gpus": 1} and len(df) == 5
    assert df["job_id"].tolist() == ["philly-1", "philly-2", "philly-0", "philly-3", "philly-5"]
    assert df["submit_time"].tolist() == [0.0, 33.0, 2932.0, 6417.0, 86400.0]
    assert df["num_gpus"].tolist() == [1, 8, 1, 16, 2]
    assert df["gpu_time"].tolist()[1] == 22072.0 and df["vc"].tolist()[0] == "6214e9"


def test_helios(fixtures):
    df, rep = load_with_report(fixtures / "helios_cluster_log.csv")
    assert rep.excluded == {"cpu_only": 1, "never_started": 1}
    assert df["job_id"].tolist() == ["1425511", "1425512", "1425513", "1425515"]
    assert df["status"].tolist() == ["COMPLETED", "FAILED", "CANCELLED", "TIMEOUT"]
    last = df.iloc[3]
    assert (last.submit_time, last.start_time, last.end_time, last.duration, last.num_gpus) == \
        (119.0, 3719.0, 90119.0, 86400.0, 16)


def test_sensetime_arrival_time_and_fields(fixtures):
    df, rep = load_with_report(fixtures / "sensetime_poisson.json")
    assert rep.excluded == {"zero_gpus": 1}
    assert df["job_id"].tolist() == ["400001", "399455", "396689"]  # by arrival_time 0, 1200, 84725
    assert df["submit_time"].tolist() == [0.0, 1200.0, 84725.0]
    assert df["num_gpus"].tolist() == [16, 8, 4]  # = max_parallelism
    r = df.iloc[2]
    # batchsize 32 is per GPU: 4 GPUs → global batch 128
    assert (r.model, r.dataset, r.global_batch, r.total_iterations) == ("MobileNetV3", "ImageNet", 128, 826085656.0)
    assert r.time_per_iteration == pytest.approx(0.0007665754697382836) and r.gpu_util == 50.0
    g = load(fixtures / "sensetime_poisson.json", batch_is="global")
    assert g.iloc[2].global_batch == 32
    with pytest.raises(InputError, match="batch_is"):
        load(fixtures / "sensetime_poisson.json", batch_is="per_node")


def test_sensetime_without_arrival_uses_submit_dates(fixtures):
    df = load(fixtures / "sensetime_april.json")
    assert df["submit_time"].tolist() == [0.0, 28.0]  # 20:00:34 → 20:01:02


def test_pollux_and_ones(fixtures):
    p = load(fixtures / "pollux_workload.csv")
    assert p["job_id"].tolist()[:2] == ["cifar10-0", "deepspeech2-1"]
    assert p["model"].tolist() == ["cifar10", "deepspeech2", "imagenet", "bert", "yolov3", "ncf"]
    assert p["global_batch"].tolist() == [2048, 320, 12800, 384, 512, 32768]
    assert p["submit_time"].tolist()[4] == 300.5
    o = load(fixtures / "ones_trace.csv")
    assert o["job_id"].tolist() == ["ones-0", "ones-1", "ones-2", "ones-3"]
    assert o["lr"].tolist()[0] == 5e-4 and o["patience"].tolist() == [10, 10, 5, 10]
    assert o["task"].tolist()[2] == "cola" and o["target_acc"].tolist()[3] == 0.9


# ---------------------------------------------------------------------------- malformed input
def _write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return p


CSV_CASES = [
    # (format, text, expected fragment)
    ("philly-csv", "timestamp,duration,num_gpus,gpu_time,cluster\n2017-10-09 07:01:55,66,x,66,a\n",
     "row 1: field 'num_gpus': expected a non-negative integer, got 'x'"),
    ("philly-csv", "timestamp,duration,num_gpus,gpu_time,cluster\n2017-10-09 07:01:55,66,1,66,a\n"
                   "2017-10-09 07:01:55,-3,1,66,a\n", "row 2: field 'duration': expected a non-negative number"),
    ("philly-csv", "timestamp,duration,gpu_time,cluster\n2017-10-09 07:01:55,66,66,a\n",
     "field 'num_gpus': expected a 'num_gpus' column"),
    ("philly-csv", "timestamp,duration,num_gpus,gpu_time,cluster\nyesterday,66,1,66,a\n",
     "row 1: field 'timestamp': expected a date-time"),
    ("helios", "job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,duration,queue\n"
               "1,u,v,1,1,1,COMPLETED,2020-06-09 18:41:01,2020-06-09 18:41:01,2020-06-09 18:40:00,,0\n",
     "row 1: field 'end_time': expected an end not before start_time"),
    ("pollux", "name,time,application,num_replicas,batch_size\na,1,cifar10,2.5,64\n",
     "row 1: field 'num_replicas': expected a non-negative integer, got '2.5'"),
    ("ones", "time,model,task,epoch_size,patience,batch_size,lr,max_lr,target_acc,num_gpus\n"
             "0,resnet50,imagenet,10,10,32,0.1,0.1,0.5,four\n", "row 1: field 'num_gpus'"),
]


@pytest.mark.parametrize("fmt,text,fragment", CSV_CASES)
def test_malformed_csv_names_file_row_field(tmp_path, fmt, text, fragment):
    p = _write(tmp_path, "t.csv", text)
    with pytest.raises(InputError) as e:
        load(p, fmt)
    msg = e.value.format_message()
    assert msg.startswith(str(p)) and fragment in msg, msg


JSON_CASES = [
    ("philly-json", "[{\"jobid\": \"j\", \"submitted_time\": \"2017-10-07 01:11:39\"", "expected valid JSON"),
    ("philly-json", "{\"jobid\": 1}", "expected a JSON list of job records"),
    ("philly-json", json.dumps([{"jobid": "j", "submitted_time": "2017-10-07 01:11:39", "attempts": [
        {"start_time": "2017-10-07 02:00:00", "end_time": "2017-10-07 01:00:00", "detail": []}]}]),
     "record 1: field 'attempts[0].end_time': expected an end not before the start"),
    ("philly-json", json.dumps([{"jobid": "j"}]), "record 1: field 'submitted_time'"),
    ("philly-json", json.dumps([{"jobid": "j", "submitted_time": "2017-10-07 01:11:39", "attempts": [
        {"start_time": "2017-10-07 01:00:00", "end_time": "2017-10-07 02:00:00", "detail": [{"gpus": "gpu0"}]}]}]),
     "record 1: field 'attempts[0].detail[0].gpus': expected a list"),
    ("sensetime", json.dumps([{"job_id": "1", "max_parallelism": "two", "duration": "5"}]),
     "record 1: field 'max_parallelism': expected a non-negative integer, got 'two'"),
    ("sensetime", json.dumps([{"job_id": "1", "max_parallelism": "2", "duration": "-5", "arrival_time": "0"}]),
     "record 1: field 'duration': expected a non-negative number"),
    ("sensetime", json.dumps([{"job_id": "1", "max_parallelism": "2", "arrival_time": "0"},
                              {"job_id": "2", "max_parallelism": "2", "submit_time": "2020-01-01 00:00:00"}]),
     "record 2: field 'arrival_time'"),
]


@pytest.mark.parametrize("fmt,text,fragment", JSON_CASES)
def test_malformed_json_names_file_record_field(tmp_path, fmt, text, fragment):
    p = _write(tmp_path, "t.json", text)
    with pytest.raises(InputError) as e:
        load(p, fmt)
    msg = e.value.format_message()
    assert msg.startswith(str(p)) and fragment in msg, msg


def test_unknown_format_and_empty_file(tmp_path):
    with pytest.raises(InputError, match="unknown format"):
        load(_write(tmp_path, "x.csv", "a,b,c\n1,2,3\n"))
    with pytest.raises(InputError, match="unknown format"):
        load(_write(tmp_path, "e.csv", ""))
    with pytest.raises(InputError, match="expected an existing file"):
        load(tmp_path / "nope.csv")


def test_duplicate_job_ids_name_the_source_row(tmp_path):
    p = _write(tmp_path, "w.csv", "name,time,application,num_replicas,batch_size\n"
                                  "a,1,cifar10,0,64\nb,2,cifar10,2,64\nb,3,cifar10,2,64\n")
    with pytest.raises(InputError, match=r"row 3: field 'job_id': expected a unique job id"):
        load(p)


# --------------------------------------------------------------------------------- real data
@pytest.mark.shared_data
def test_real_philly_csv_all_82247_jobs(shared_data):
    df, rep = load_with_report(shared_data / "traces/philly/philly_jobs.csv")
    assert rep.rows_read == 82247 and len(df) == 82247 and rep.excluded == {}
    assert df["num_gpus"].value_counts()[1] == 76627 and df["num_gpus"].max() == 128
    assert np.isclose(df["gpu_time"], df["duration"] * df["num_gpus"]).all()


@pytest.mark.shared_data
def test_real_sensetime_files(shared_data):
    counts = {}
    for f in sorted(glob.glob(str(shared_data / "traces/sensetime/*.json"))):
        df = load(f)
        counts[f.rsplit("/", 1)[1]] = len(df)
        assert df["model"].notna().all() and df["global_batch"].notna().all()
    assert counts["sense_500jobs_0start0arrival-withBert.json"] == 500
    assert counts["sense_500jobs_poisson_1proc-week.json"] == 411
    batch = load(shared_data / "traces/sensetime/sense_500jobs_0start0arrival-withBert.json")
    # Dally notes §5.2: GPU demand histogram of the batch set
    assert batch["num_gpus"].value_counts().to_dict() == {1: 270, 8: 109, 4: 52, 16: 42, 2: 13, 32: 11,
                                                          40: 1, 48: 1, 56: 1}
    assert (batch["submit_time"] == 0).all()


@pytest.mark.shared_data
def test_real_workloads_and_ones(shared_data):
    for sub, n in (("philly/workloads", 160), ("helios-saturn/workloads", 160), ("newtrace/workloads", 960),
                   ("philly/workloads-pollux-osdi21", 160)):
        for f in sorted(glob.glob(str(shared_data / "traces" / sub / "workload-*.csv"))):
            df, rep = load_with_report(f)
            assert rep.format == "pollux" and len(df) == n, f
    ones = load(shared_data / "traces/ones/trace_1.csv")
    assert len(ones) == 400 and set(ones["num_gpus"]) == {2, 4, 8, 16}


def test_philly_json_options(fixtures):
    f = fixtures / "philly_cluster_job_log.json"
    first = load(f, gpus_from="first", duration_mode="sum").set_index("job_id")
    a = first.loc["application_1506638472019_14199"]
    assert a.num_gpus == 8 and a.duration == 74.0 + 7200.0  # attempts 01:12:09–01:13:23 and 01:13:30–03:13:30
    with pytest.raises(InputError, match="option of the philly-json reader"):
        load(f, colour="red")
