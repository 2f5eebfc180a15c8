"""Record formats the connectors read, beyond what Spark's readers do by themselves.

:mod:`~sqlstream.connectors.formats.avro` reads the Avro schema of Kafka values and gives
each field its Spark type; :mod:`~sqlstream.connectors.formats.csv_header` reads the header
of the CSV files a stream or table reads, so that columns are bound by name;
:mod:`~sqlstream.connectors.formats.kafka_records` decodes Kafka's ``value`` and encodes a
query's rows into it, as SQL. None defines a connector (the registry in :mod:`sqlstream.connectors` skips this package).
"""
