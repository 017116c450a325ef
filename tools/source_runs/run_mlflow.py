"""Two MLflow runs in one experiment, trained for real with torch on CPU and
written twice: to a file store (mlruns/) as mlflow/store/tracking/file_store.py
writes it, and to mlflow.db with MLflow's SQL schema, as
mlflow/store/tracking/sqlalchemy_store.py fills it.

File store facts relied on (file_store.py, yaml_utils.write_yaml):
  <root>/0/meta.yaml                Default experiment, made when the store is created
  <root>/.trash/                    made when the store is created (empty)
  <root>/<exp_id>/meta.yaml         artifact_location, creation_time, experiment_id
                                    (a string), last_update_time, lifecycle_stage, name
  <root>/<exp_id>/<run_id>/meta.yaml  dict(RunInfo) + tags: [], status as an int
                                    (RUNNING 1 ... FINISHED 3), source_type 4 (LOCAL),
                                    source_name/entry_point_name/source_version ''
  .../metrics/<key>                 one line per point: "<timestamp_ms> <value> <step>\n",
                                    value formatted by f"{float}" (nan, inf as written
                                    by Python); a key with '/' is a nested path
  .../params/<key>, .../tags/<key>  the value, no trailing newline
  YAML: yaml.dump(default_flow_style=False, sort_keys=True)
SQL store facts: NaN is stored as value 0 with is_nan 1, +-inf as
+-1.7976931348623157e308 with is_nan 0; latest_metrics keeps, per key, the
point with the largest (step, timestamp, stored value); runs.source_type
'UNKNOWN'; runs.status 'RUNNING' then 'FINISHED'.
"""

import os
import random
import sqlite3
import time
import uuid

import torch
import torch.nn as nn

from common import write_text, yaml_scalar

ROOT_URI = "file:///srv/train/mlruns"  # where the store is said to live (illustrative)
USER = "trainer"
SOURCE = "/srv/train/train_mlflow.py"

# The schema of tests/resources/db/latest_schema.sql in mlflow master as of
# 2025-12-18 (alembic head 5d2d30f0abce), plus the run_uuid indexes that
# migration bd07f7e963c5 creates on params, metrics, latest_metrics and tags.
ALEMBIC_REVISION = "5d2d30f0abce"
SCHEMA = """
CREATE TABLE alembic_version (
	version_num VARCHAR(32) NOT NULL,
	CONSTRAINT alembic_version_pkc PRIMARY KEY (version_num)
);
CREATE TABLE endpoints (
	endpoint_id VARCHAR(36) NOT NULL,
	name VARCHAR(255),
	created_by VARCHAR(255),
	created_at BIGINT NOT NULL,
	last_updated_by VARCHAR(255),
	last_updated_at BIGINT NOT NULL,
	CONSTRAINT endpoints_pk PRIMARY KEY (endpoint_id)
);
CREATE TABLE entity_associations (
	association_id VARCHAR(36) NOT NULL,
	source_type VARCHAR(36) NOT NULL,
	source_id VARCHAR(36) NOT NULL,
	destination_type VARCHAR(36) NOT NULL,
	destination_id VARCHAR(36) NOT NULL,
	created_time BIGINT,
	CONSTRAINT entity_associations_pk PRIMARY KEY (source_type, source_id, destination_type, destination_id)
);
CREATE TABLE evaluation_datasets (
	dataset_id VARCHAR(36) NOT NULL,
	name VARCHAR(255) NOT NULL,
	schema TEXT,
	profile TEXT,
	digest VARCHAR(64),
	created_time BIGINT,
	last_update_time BIGINT,
	created_by VARCHAR(255),
	last_updated_by VARCHAR(255),
	CONSTRAINT evaluation_datasets_pk PRIMARY KEY (dataset_id)
);
CREATE TABLE experiments (
	experiment_id INTEGER NOT NULL,
	name VARCHAR(256) NOT NULL,
	artifact_location VARCHAR(256),
	lifecycle_stage VARCHAR(32),
	creation_time BIGINT,
	last_update_time BIGINT,
	CONSTRAINT experiment_pk PRIMARY KEY (experiment_id),
	UNIQUE (name),
	CONSTRAINT experiments_lifecycle_stage CHECK (lifecycle_stage IN ('active', 'deleted'))
);
CREATE TABLE input_tags (
	input_uuid VARCHAR(36) NOT NULL,
	name VARCHAR(255) NOT NULL,
	value VARCHAR(500) NOT NULL,
	CONSTRAINT input_tags_pk PRIMARY KEY (input_uuid, name)
);
CREATE TABLE inputs (
	input_uuid VARCHAR(36) NOT NULL,
	source_type VARCHAR(36) NOT NULL,
	source_id VARCHAR(36) NOT NULL,
	destination_type VARCHAR(36) NOT NULL,
	destination_id VARCHAR(36) NOT NULL,
	step BIGINT DEFAULT '0' NOT NULL,
	CONSTRAINT inputs_pk PRIMARY KEY (source_type, source_id, destination_type, destination_id)
);
CREATE TABLE jobs (
	id VARCHAR(36) NOT NULL,
	creation_time BIGINT NOT NULL,
	job_name VARCHAR(500) NOT NULL,
	params TEXT NOT NULL,
	timeout FLOAT,
	status INTEGER NOT NULL,
	result TEXT,
	retry_count INTEGER NOT NULL,
	last_update_time BIGINT NOT NULL,
	CONSTRAINT jobs_pk PRIMARY KEY (id)
);
CREATE TABLE registered_models (
	name VARCHAR(256) NOT NULL,
	creation_time BIGINT,
	last_updated_time BIGINT,
	description VARCHAR(5000),
	CONSTRAINT registered_model_pk PRIMARY KEY (name),
	UNIQUE (name)
);
CREATE TABLE secrets (
	secret_id VARCHAR(36) NOT NULL,
	secret_name VARCHAR(255) NOT NULL,
	encrypted_value BLOB NOT NULL,
	wrapped_dek BLOB NOT NULL,
	kek_version INTEGER NOT NULL,
	masked_value VARCHAR(100) NOT NULL,
	provider VARCHAR(64),
	auth_config TEXT,
	description TEXT,
	created_by VARCHAR(255),
	created_at BIGINT NOT NULL,
	last_updated_by VARCHAR(255),
	last_updated_at BIGINT NOT NULL,
	CONSTRAINT secrets_pk PRIMARY KEY (secret_id)
);
CREATE TABLE webhooks (
	webhook_id VARCHAR(256) NOT NULL,
	name VARCHAR(256) NOT NULL,
	description VARCHAR(1000),
	url VARCHAR(500) NOT NULL,
	status VARCHAR(20) DEFAULT 'ACTIVE' NOT NULL,
	secret VARCHAR(1000),
	creation_timestamp BIGINT,
	last_updated_timestamp BIGINT,
	deleted_timestamp BIGINT,
	CONSTRAINT webhook_pk PRIMARY KEY (webhook_id)
);
CREATE TABLE datasets (
	dataset_uuid VARCHAR(36) NOT NULL,
	experiment_id INTEGER NOT NULL,
	name VARCHAR(500) NOT NULL,
	digest VARCHAR(36) NOT NULL,
	dataset_source_type VARCHAR(36) NOT NULL,
	dataset_source TEXT NOT NULL,
	dataset_schema TEXT,
	dataset_profile TEXT,
	CONSTRAINT dataset_pk PRIMARY KEY (experiment_id, name, digest),
	CONSTRAINT fk_datasets_experiment_id_experiments FOREIGN KEY(experiment_id) REFERENCES experiments (experiment_id) ON DELETE CASCADE
);
CREATE TABLE endpoint_bindings (
	endpoint_id VARCHAR(36) NOT NULL,
	resource_type VARCHAR(50) NOT NULL,
	resource_id VARCHAR(255) NOT NULL,
	created_at BIGINT NOT NULL,
	created_by VARCHAR(255),
	last_updated_at BIGINT NOT NULL,
	last_updated_by VARCHAR(255),
	CONSTRAINT endpoint_bindings_pk PRIMARY KEY (endpoint_id, resource_type, resource_id),
	CONSTRAINT fk_endpoint_bindings_endpoint_id FOREIGN KEY(endpoint_id) REFERENCES endpoints (endpoint_id) ON DELETE CASCADE
);
CREATE TABLE endpoint_tags (
	key VARCHAR(250) NOT NULL,
	value VARCHAR(5000),
	endpoint_id VARCHAR(36) NOT NULL,
	CONSTRAINT endpoint_tag_pk PRIMARY KEY (key, endpoint_id),
	CONSTRAINT fk_endpoint_tags_endpoint_id FOREIGN KEY(endpoint_id) REFERENCES endpoints (endpoint_id) ON DELETE CASCADE
);
CREATE TABLE evaluation_dataset_records (
	dataset_record_id VARCHAR(36) NOT NULL,
	dataset_id VARCHAR(36) NOT NULL,
	inputs JSON NOT NULL,
	expectations JSON,
	tags JSON,
	source JSON,
	source_id VARCHAR(36),
	source_type VARCHAR(255),
	created_time BIGINT,
	last_update_time BIGINT,
	created_by VARCHAR(255),
	last_updated_by VARCHAR(255),
	input_hash VARCHAR(64) NOT NULL,
	outputs JSON,
	CONSTRAINT evaluation_dataset_records_pk PRIMARY KEY (dataset_record_id),
	CONSTRAINT fk_evaluation_dataset_records_dataset_id FOREIGN KEY(dataset_id) REFERENCES evaluation_datasets (dataset_id) ON DELETE CASCADE,
	CONSTRAINT unique_dataset_input UNIQUE (dataset_id, input_hash)
);
CREATE TABLE evaluation_dataset_tags (
	dataset_id VARCHAR(36) NOT NULL,
	key VARCHAR(255) NOT NULL,
	value VARCHAR(5000),
	CONSTRAINT evaluation_dataset_tags_pk PRIMARY KEY (dataset_id, key),
	CONSTRAINT fk_evaluation_dataset_tags_dataset_id FOREIGN KEY(dataset_id) REFERENCES evaluation_datasets (dataset_id) ON DELETE CASCADE
);
CREATE TABLE experiment_tags (
	key VARCHAR(250) NOT NULL,
	value VARCHAR(5000),
	experiment_id INTEGER NOT NULL,
	CONSTRAINT experiment_tag_pk PRIMARY KEY (key, experiment_id),
	FOREIGN KEY(experiment_id) REFERENCES experiments (experiment_id)
);
CREATE TABLE logged_models (
	model_id VARCHAR(36) NOT NULL,
	experiment_id INTEGER NOT NULL,
	name VARCHAR(500) NOT NULL,
	artifact_location VARCHAR(1000) NOT NULL,
	creation_timestamp_ms BIGINT NOT NULL,
	last_updated_timestamp_ms BIGINT NOT NULL,
	status INTEGER NOT NULL,
	lifecycle_stage VARCHAR(32),
	model_type VARCHAR(500),
	source_run_id VARCHAR(32),
	status_message VARCHAR(1000),
	CONSTRAINT logged_models_pk PRIMARY KEY (model_id),
	CONSTRAINT fk_logged_models_experiment_id FOREIGN KEY(experiment_id) REFERENCES experiments (experiment_id) ON DELETE CASCADE,
	CONSTRAINT logged_models_lifecycle_stage_check CHECK (lifecycle_stage IN ('active', 'deleted'))
);
CREATE TABLE model_definitions (
	model_definition_id VARCHAR(36) NOT NULL,
	name VARCHAR(255) NOT NULL,
	secret_id VARCHAR(36),
	provider VARCHAR(64) NOT NULL,
	model_name VARCHAR(256) NOT NULL,
	created_by VARCHAR(255),
	created_at BIGINT NOT NULL,
	last_updated_by VARCHAR(255),
	last_updated_at BIGINT NOT NULL,
	CONSTRAINT model_definitions_pk PRIMARY KEY (model_definition_id),
	CONSTRAINT fk_model_definitions_secret_id FOREIGN KEY(secret_id) REFERENCES secrets (secret_id) ON DELETE SET NULL
);
CREATE TABLE model_versions (
	name VARCHAR(256) NOT NULL,
	version INTEGER NOT NULL,
	creation_time BIGINT,
	last_updated_time BIGINT,
	description VARCHAR(5000),
	user_id VARCHAR(256),
	current_stage VARCHAR(20),
	source VARCHAR(500),
	run_id VARCHAR(32),
	status VARCHAR(20),
	status_message VARCHAR(500),
	run_link VARCHAR(500),
	storage_location VARCHAR(500),
	CONSTRAINT model_version_pk PRIMARY KEY (name, version),
	FOREIGN KEY(name) REFERENCES registered_models (name) ON UPDATE CASCADE
);
CREATE TABLE registered_model_aliases (
	alias VARCHAR(256) NOT NULL,
	version INTEGER NOT NULL,
	name VARCHAR(256) NOT NULL,
	CONSTRAINT registered_model_alias_pk PRIMARY KEY (name, alias),
	CONSTRAINT registered_model_alias_name_fkey FOREIGN KEY(name) REFERENCES registered_models (name) ON DELETE CASCADE ON UPDATE CASCADE
);
CREATE TABLE registered_model_tags (
	key VARCHAR(250) NOT NULL,
	value VARCHAR(5000),
	name VARCHAR(256) NOT NULL,
	CONSTRAINT registered_model_tag_pk PRIMARY KEY (key, name),
	FOREIGN KEY(name) REFERENCES registered_models (name) ON UPDATE CASCADE
);
CREATE TABLE runs (
	run_uuid VARCHAR(32) NOT NULL,
	name VARCHAR(250),
	source_type VARCHAR(20),
	source_name VARCHAR(500),
	entry_point_name VARCHAR(50),
	user_id VARCHAR(256),
	status VARCHAR(9),
	start_time BIGINT,
	end_time BIGINT,
	source_version VARCHAR(50),
	lifecycle_stage VARCHAR(20),
	artifact_uri VARCHAR(200),
	experiment_id INTEGER,
	deleted_time BIGINT,
	CONSTRAINT run_pk PRIMARY KEY (run_uuid),
	FOREIGN KEY(experiment_id) REFERENCES experiments (experiment_id),
	CONSTRAINT runs_lifecycle_stage CHECK (lifecycle_stage IN ('active', 'deleted')),
	CONSTRAINT source_type CHECK (source_type IN ('NOTEBOOK', 'JOB', 'LOCAL', 'UNKNOWN', 'PROJECT')),
	CHECK (status IN ('SCHEDULED', 'FAILED', 'FINISHED', 'RUNNING', 'KILLED'))
);
CREATE TABLE scorers (
	experiment_id INTEGER NOT NULL,
	scorer_name VARCHAR(256) NOT NULL,
	scorer_id VARCHAR(36) NOT NULL,
	CONSTRAINT scorer_pk PRIMARY KEY (scorer_id),
	CONSTRAINT fk_scorers_experiment_id FOREIGN KEY(experiment_id) REFERENCES experiments (experiment_id) ON DELETE CASCADE
);
CREATE TABLE trace_info (
	request_id VARCHAR(50) NOT NULL,
	experiment_id INTEGER NOT NULL,
	timestamp_ms BIGINT NOT NULL,
	execution_time_ms BIGINT,
	status VARCHAR(50) NOT NULL,
	client_request_id VARCHAR(50),
	request_preview VARCHAR(1000),
	response_preview VARCHAR(1000),
	CONSTRAINT trace_info_pk PRIMARY KEY (request_id),
	CONSTRAINT fk_trace_info_experiment_id FOREIGN KEY(experiment_id) REFERENCES experiments (experiment_id)
);
CREATE TABLE webhook_events (
	webhook_id VARCHAR(256) NOT NULL,
	entity VARCHAR(50) NOT NULL,
	action VARCHAR(50) NOT NULL,
	CONSTRAINT webhook_event_pk PRIMARY KEY (webhook_id, entity, action),
	FOREIGN KEY(webhook_id) REFERENCES webhooks (webhook_id) ON DELETE CASCADE
);
CREATE TABLE assessments (
	assessment_id VARCHAR(50) NOT NULL,
	trace_id VARCHAR(50) NOT NULL,
	name VARCHAR(250) NOT NULL,
	assessment_type VARCHAR(20) NOT NULL,
	value TEXT NOT NULL,
	error TEXT,
	created_timestamp BIGINT NOT NULL,
	last_updated_timestamp BIGINT NOT NULL,
	source_type VARCHAR(50) NOT NULL,
	source_id VARCHAR(250),
	run_id VARCHAR(32),
	span_id VARCHAR(50),
	rationale TEXT,
	overrides VARCHAR(50),
	valid BOOLEAN NOT NULL,
	assessment_metadata TEXT,
	CONSTRAINT assessments_pk PRIMARY KEY (assessment_id),
	CONSTRAINT fk_assessments_trace_id FOREIGN KEY(trace_id) REFERENCES trace_info (request_id) ON DELETE CASCADE
);
CREATE TABLE endpoint_model_mappings (
	mapping_id VARCHAR(36) NOT NULL,
	endpoint_id VARCHAR(36) NOT NULL,
	model_definition_id VARCHAR(36) NOT NULL,
	weight FLOAT NOT NULL,
	created_by VARCHAR(255),
	created_at BIGINT NOT NULL,
	CONSTRAINT endpoint_model_mappings_pk PRIMARY KEY (mapping_id),
	CONSTRAINT fk_endpoint_model_mappings_endpoint_id FOREIGN KEY(endpoint_id) REFERENCES endpoints (endpoint_id) ON DELETE CASCADE,
	CONSTRAINT fk_endpoint_model_mappings_model_definition_id FOREIGN KEY(model_definition_id) REFERENCES model_definitions (model_definition_id)
);
CREATE TABLE latest_metrics (
	key VARCHAR(250) NOT NULL,
	value FLOAT NOT NULL,
	timestamp BIGINT,
	step BIGINT NOT NULL,
	is_nan BOOLEAN NOT NULL,
	run_uuid VARCHAR(32) NOT NULL,
	CONSTRAINT latest_metric_pk PRIMARY KEY (key, run_uuid),
	FOREIGN KEY(run_uuid) REFERENCES runs (run_uuid),
	CHECK (is_nan IN (0, 1))
);
CREATE TABLE logged_model_metrics (
	model_id VARCHAR(36) NOT NULL,
	metric_name VARCHAR(500) NOT NULL,
	metric_timestamp_ms BIGINT NOT NULL,
	metric_step BIGINT NOT NULL,
	metric_value FLOAT,
	experiment_id INTEGER NOT NULL,
	run_id VARCHAR(32) NOT NULL,
	dataset_uuid VARCHAR(36),
	dataset_name VARCHAR(500),
	dataset_digest VARCHAR(36),
	CONSTRAINT logged_model_metrics_pk PRIMARY KEY (model_id, metric_name, metric_timestamp_ms, metric_step, run_id),
	CONSTRAINT fk_logged_model_metrics_experiment_id FOREIGN KEY(experiment_id) REFERENCES experiments (experiment_id),
	CONSTRAINT fk_logged_model_metrics_model_id FOREIGN KEY(model_id) REFERENCES logged_models (model_id) ON DELETE CASCADE,
	CONSTRAINT fk_logged_model_metrics_run_id FOREIGN KEY(run_id) REFERENCES runs (run_uuid) ON DELETE CASCADE
);
CREATE TABLE logged_model_params (
	model_id VARCHAR(36) NOT NULL,
	experiment_id INTEGER NOT NULL,
	param_key VARCHAR(255) NOT NULL,
	param_value TEXT NOT NULL,
	CONSTRAINT logged_model_params_pk PRIMARY KEY (model_id, param_key),
	CONSTRAINT fk_logged_model_params_experiment_id FOREIGN KEY(experiment_id) REFERENCES experiments (experiment_id),
	CONSTRAINT fk_logged_model_params_model_id FOREIGN KEY(model_id) REFERENCES logged_models (model_id) ON DELETE CASCADE
);
CREATE TABLE logged_model_tags (
	model_id VARCHAR(36) NOT NULL,
	experiment_id INTEGER NOT NULL,
	tag_key VARCHAR(255) NOT NULL,
	tag_value TEXT NOT NULL,
	CONSTRAINT logged_model_tags_pk PRIMARY KEY (model_id, tag_key),
	CONSTRAINT fk_logged_model_tags_experiment_id FOREIGN KEY(experiment_id) REFERENCES experiments (experiment_id),
	CONSTRAINT fk_logged_model_tags_model_id FOREIGN KEY(model_id) REFERENCES logged_models (model_id) ON DELETE CASCADE
);
CREATE TABLE metrics (
	key VARCHAR(250) NOT NULL,
	value FLOAT NOT NULL,
	timestamp BIGINT NOT NULL,
	run_uuid VARCHAR(32) NOT NULL,
	step BIGINT DEFAULT '0' NOT NULL,
	is_nan BOOLEAN DEFAULT '0' NOT NULL,
	CONSTRAINT metric_pk PRIMARY KEY (key, timestamp, step, run_uuid, value, is_nan),
	FOREIGN KEY(run_uuid) REFERENCES runs (run_uuid),
	CHECK (is_nan IN (0, 1))
);
CREATE TABLE model_version_tags (
	key VARCHAR(250) NOT NULL,
	value TEXT,
	name VARCHAR(256) NOT NULL,
	version INTEGER NOT NULL,
	CONSTRAINT model_version_tag_pk PRIMARY KEY (key, name, version),
	FOREIGN KEY(name, version) REFERENCES model_versions (name, version) ON UPDATE CASCADE
);
CREATE TABLE params (
	key VARCHAR(250) NOT NULL,
	value VARCHAR(8000) NOT NULL,
	run_uuid VARCHAR(32) NOT NULL,
	CONSTRAINT param_pk PRIMARY KEY (key, run_uuid),
	FOREIGN KEY(run_uuid) REFERENCES runs (run_uuid)
);
CREATE TABLE scorer_versions (
	scorer_id VARCHAR(36) NOT NULL,
	scorer_version INTEGER NOT NULL,
	serialized_scorer TEXT NOT NULL,
	creation_time BIGINT,
	CONSTRAINT scorer_version_pk PRIMARY KEY (scorer_id, scorer_version),
	CONSTRAINT fk_scorer_versions_scorer_id FOREIGN KEY(scorer_id) REFERENCES scorers (scorer_id) ON DELETE CASCADE
);
CREATE TABLE spans (
	trace_id VARCHAR(50) NOT NULL,
	experiment_id INTEGER NOT NULL,
	span_id VARCHAR(50) NOT NULL,
	parent_span_id VARCHAR(50),
	name TEXT,
	type VARCHAR(500),
	status VARCHAR(50) NOT NULL,
	start_time_unix_nano BIGINT NOT NULL,
	end_time_unix_nano BIGINT,
	duration_ns BIGINT GENERATED ALWAYS AS (end_time_unix_nano - start_time_unix_nano) STORED,
	content TEXT NOT NULL,
	CONSTRAINT spans_pk PRIMARY KEY (trace_id, span_id),
	CONSTRAINT fk_spans_trace_id FOREIGN KEY(trace_id) REFERENCES trace_info (request_id) ON DELETE CASCADE,
	CONSTRAINT fk_spans_experiment_id FOREIGN KEY(experiment_id) REFERENCES experiments (experiment_id)
);
CREATE TABLE tags (
	key VARCHAR(250) NOT NULL,
	value VARCHAR(8000),
	run_uuid VARCHAR(32) NOT NULL,
	CONSTRAINT tag_pk PRIMARY KEY (key, run_uuid),
	FOREIGN KEY(run_uuid) REFERENCES runs (run_uuid)
);
CREATE TABLE trace_metrics (
	request_id VARCHAR(50) NOT NULL,
	key VARCHAR(250) NOT NULL,
	value FLOAT,
	CONSTRAINT trace_metrics_pk PRIMARY KEY (request_id, key),
	CONSTRAINT fk_trace_metrics_request_id FOREIGN KEY(request_id) REFERENCES trace_info (request_id) ON DELETE CASCADE
);
CREATE TABLE trace_request_metadata (
	key VARCHAR(250) NOT NULL,
	value VARCHAR(8000),
	request_id VARCHAR(50) NOT NULL,
	CONSTRAINT trace_request_metadata_pk PRIMARY KEY (key, request_id),
	CONSTRAINT fk_trace_request_metadata_request_id FOREIGN KEY(request_id) REFERENCES trace_info (request_id) ON DELETE CASCADE
);
CREATE TABLE trace_tags (
	key VARCHAR(250) NOT NULL,
	value VARCHAR(8000),
	request_id VARCHAR(50) NOT NULL,
	CONSTRAINT trace_tag_pk PRIMARY KEY (key, request_id),
	CONSTRAINT fk_trace_tags_request_id FOREIGN KEY(request_id) REFERENCES trace_info (request_id) ON DELETE CASCADE
);
CREATE INDEX index_params_run_uuid ON params (run_uuid);
CREATE INDEX index_metrics_run_uuid ON metrics (run_uuid);
CREATE INDEX index_latest_metrics_run_uuid ON latest_metrics (run_uuid);
CREATE INDEX index_tags_run_uuid ON tags (run_uuid);
"""

RUN_STATUS = {"RUNNING": 1, "SCHEDULED": 2, "FINISHED": 3, "FAILED": 4, "KILLED": 5}
SQL_INF = 1.7976931348623157e308


def now_ms():
    return int(time.time() * 1000)


def yaml_block(d):
    """yaml.dump(d, default_flow_style=False, sort_keys=True) for the meta.yaml dicts."""
    out = []
    for k in sorted(d):
        v = d[k]
        out.append(f"{k}: []\n" if v == [] else f"{k}: {yaml_scalar(v)}\n")
    return "".join(out)


class Stores:
    """One MLflow client writing the same runs to a file store and a SQL store."""

    def __init__(self, out_root, exp, rng):
        self.out_root = out_root
        self.exp = exp
        self.rng = rng
        self.fs_root = os.path.join(out_root, "mlflow", "mlruns")
        os.makedirs(os.path.join(self.fs_root, ".trash"), exist_ok=True)
        db_path = os.path.join(out_root, "mlflow", "mlflow.db")
        if os.path.exists(db_path):
            os.remove(db_path)
        self.db = sqlite3.connect(db_path)
        self.db.execute("PRAGMA page_size = 1024")
        self.db.executescript(SCHEMA)
        self.db.execute("INSERT INTO alembic_version (version_num) VALUES (?)", (ALEMBIC_REVISION,))
        t = now_ms()
        # FileStore: Default experiment "0" when the root is first created
        self._fs_experiment("0", "Default", t)
        # SqlAlchemyStore._create_default_experiment
        self.db.execute("INSERT INTO experiments VALUES (?,?,?,?,?,?)",
                        (0, "Default", f"{ROOT_URI}/0", "active", t, t))
        self.db.commit()

    def _fs_experiment(self, exp_id, name, t):
        d = os.path.join(self.fs_root, exp_id)
        os.makedirs(d, exist_ok=True)
        write_text(os.path.join(d, "meta.yaml"), yaml_block({
            "artifact_location": f"{ROOT_URI}/{exp_id}", "creation_time": t,
            "experiment_id": exp_id, "last_update_time": t, "lifecycle_stage": "active",
            "name": name}))

    def create_experiment(self, name):
        # FileStore.create_experiment: _generate_unique_integer_id() (18 digits)
        s = str(uuid.UUID(int=self.rng.getrandbits(128)).int)[-18:]
        while s[0] == "0":
            s = s[1:] + str(self.rng.randint(0, 9))
        self.fs_exp_id = s
        t = now_ms()
        self._fs_experiment(self.fs_exp_id, name, t)
        # SqlAlchemyStore: autoincrement id
        cur = self.db.execute("INSERT INTO experiments (name, artifact_location, lifecycle_stage,"
                              " creation_time, last_update_time) VALUES (?,?,?,?,?)",
                              (name, None, "active", t, t))
        self.db_exp_id = cur.lastrowid
        self.db.execute("UPDATE experiments SET artifact_location=? WHERE experiment_id=?",
                        (f"{ROOT_URI}/{self.db_exp_id}", self.db_exp_id))
        self.db.commit()


class Run:
    def __init__(self, stores, run_name):
        self.s = stores
        self.run_id = uuid.UUID(int=stores.rng.getrandbits(128), version=4).hex
        self.name = run_name
        self.start = now_ms()
        self.dir = os.path.join(stores.fs_root, stores.fs_exp_id, self.run_id)
        self.rel_fs = f"mlflow/mlruns/{stores.fs_exp_id}/{self.run_id}"
        self.rel_db = f"mlflow/mlflow.db#{self.run_id}"
        for sub in ("metrics", "params", "artifacts"):
            os.makedirs(os.path.join(self.dir, sub), exist_ok=True)
        self._write_meta("RUNNING", None)
        db = stores.db
        db.execute("INSERT INTO runs VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                   (self.run_id, run_name, "UNKNOWN", "", "", USER, "RUNNING", self.start, None, "",
                    "active", f"{ROOT_URI}/{stores.db_exp_id}/{self.run_id}/artifacts",
                    stores.db_exp_id, None))
        # tags the fluent mlflow.start_run sets (resolve_tags), plus mlflow.runName
        for k, v in (("mlflow.user", USER), ("mlflow.source.name", SOURCE),
                     ("mlflow.source.type", "LOCAL"), ("mlflow.runName", run_name)):
            self.set_tag(k, v)
        db.commit()
        self.latest = {}

    def _write_meta(self, status, end_time):
        write_text(os.path.join(self.dir, "meta.yaml"), yaml_block({
            "artifact_uri": f"{ROOT_URI}/{self.s.fs_exp_id}/{self.run_id}/artifacts",
            "end_time": end_time, "entry_point_name": "", "experiment_id": self.s.fs_exp_id,
            "lifecycle_stage": "active", "run_id": self.run_id, "run_name": self.name,
            "run_uuid": self.run_id, "source_name": "", "source_type": 4, "source_version": "",
            "start_time": self.start, "status": RUN_STATUS[status], "tags": [], "user_id": USER}))

    def set_tag(self, k, v):
        write_text(os.path.join(self.dir, "tags", k), v)
        self.s.db.execute("INSERT INTO tags (key, value, run_uuid) VALUES (?,?,?)", (k, v, self.run_id))

    def log_params(self, params):
        for k, v in params.items():
            write_text(os.path.join(self.dir, "params", k), str(v))
            self.s.db.execute("INSERT INTO params (key, value, run_uuid) VALUES (?,?,?)",
                              (k, str(v), self.run_id))
        self.s.db.commit()

    def log_metric(self, key, value, step):
        value = float(value)
        ts = now_ms()
        line = f"{ts} {value} {step}\n"
        write_text(os.path.join(self.dir, "metrics", key), line, mode="a")
        self.s.exp.add(self.rel_fs, key, step, float(f"{value}"))
        is_nan = value != value
        if is_nan:
            stored = 0.0
        elif value in (float("inf"), float("-inf")):
            stored = SQL_INF if value > 0 else -SQL_INF
        else:
            stored = value
        db = self.s.db
        db.execute("INSERT INTO metrics (key, value, timestamp, run_uuid, step, is_nan)"
                   " VALUES (?,?,?,?,?,?)", (key, stored, ts, self.run_id, step, int(is_nan)))
        # what SqlMetric.to_mlflow_entity gives back: NaN from is_nan, else the stored value
        self.s.exp.add(self.rel_db, key, step, float("nan") if is_nan else stored)
        cur = self.latest.get(key)
        if cur is None or (step, ts, stored) > cur:
            self.latest[key] = (step, ts, stored)
            db.execute("INSERT OR REPLACE INTO latest_metrics (key, value, timestamp, step, is_nan,"
                       " run_uuid) VALUES (?,?,?,?,?,?)",
                       (key, stored, ts, step, int(is_nan), self.run_id))
        db.commit()

    def end(self, status="FINISHED"):
        end = now_ms()
        self._write_meta(status, end)
        self.s.db.execute("UPDATE runs SET status=?, end_time=? WHERE run_uuid=?",
                          (status, end, self.run_id))
        self.s.db.commit()


def train_sgd_diverge(run):
    """MLP regression on unscaled features (feature std up to 10), SGD with
    momentum 0.9 at lr 0.006: too large a step for the curvature the largest
    feature gives, so the loss oscillates, then grows geometrically and overflows."""
    torch.manual_seed(3)
    g = torch.Generator().manual_seed(3)
    n, d = 256, 8
    scale = torch.tensor([10., 5, 3, 2, 1, 1, 1, 1])
    X = torch.randn(n, d, generator=g) * scale
    w = torch.randn(d, generator=g)
    y = X @ w + 0.5 * torch.randn(n, generator=g)
    Xv = torch.randn(64, d, generator=g) * scale
    yv = Xv @ w + 0.5 * torch.randn(64, generator=g)
    model = nn.Sequential(nn.Linear(d, 16), nn.ReLU(), nn.Linear(16, 1))
    lr = 0.006
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    run.log_params({"learning_rate": lr, "momentum": 0.9, "optimizer": "SGD", "batch_size": 32,
                    "hidden_dim": 16, "normalize_inputs": False, "steps": 80})
    for step in range(80):
        i = (step * 32) % n
        xb, yb = X[i:i + 32], y[i:i + 32]
        loss = ((model(xb).squeeze(1) - yb) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        gn = torch.nn.utils.clip_grad_norm_(model.parameters(), float("inf"))
        opt.step()
        run.log_metric("loss", loss.item(), step)
        run.log_metric("grad_norm", gn.item(), step)
        if step % 10 == 9:
            with torch.no_grad():
                vl = ((model(Xv).squeeze(1) - yv) ** 2).mean()
            run.log_metric("val/loss", vl.item(), step)


def train_adam_classifier(run):
    """Healthy MLP classifier on Gaussian clusters, Adam with cosine decay."""
    torch.manual_seed(5)
    g = torch.Generator().manual_seed(5)
    centers = torch.randn(3, 10, generator=g) * 1.5
    y = torch.randint(0, 3, (384,), generator=g)
    X = centers[y] + torch.randn(384, 10, generator=g) * 1.3
    yv = torch.randint(0, 3, (96,), generator=g)
    Xv = centers[yv] + torch.randn(96, 10, generator=g) * 1.3
    model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 3))
    epochs, bs = 6, 32
    steps = epochs * (384 // bs)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=steps)
    run.log_params({"learning_rate": 3e-3, "optimizer": "Adam", "scheduler": "cosine",
                    "batch_size": bs, "epochs": epochs, "hidden_dim": 32})
    step = 0
    pg = torch.Generator().manual_seed(6)
    for ep in range(epochs):
        order = torch.randperm(384, generator=pg)
        for b in range(384 // bs):
            idx = order[b * bs:(b + 1) * bs]
            loss = nn.functional.cross_entropy(model(X[idx]), y[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            run.log_metric("loss", loss.item(), step)
            run.log_metric("lr", sched.get_last_lr()[0], step)
            sched.step()
            step += 1
        with torch.no_grad():
            logits = model(Xv)
            run.log_metric("val/loss", nn.functional.cross_entropy(logits, yv).item(), step - 1)
            run.log_metric("val/acc", (logits.argmax(1) == yv).float().mean().item(), step - 1)


def run_all(out_root, exp, seed=2024):
    rng = random.Random(seed)
    stores = Stores(out_root, exp, rng)
    stores.create_experiment("trainwatch-sources")
    r1 = Run(stores, "sgd-unscaled-diverge")
    train_sgd_diverge(r1)
    r1.end("FINISHED")
    r2 = Run(stores, "adam-clusters-healthy")
    train_adam_classifier(r2)
    r2.end("FINISHED")
    stores.db.execute("VACUUM")
    stores.db.close()
    return stores, (r1, r2)
