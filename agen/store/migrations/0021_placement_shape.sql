-- deployments.placement is the bundle's placement object ({"labels": {...}}), the shape the
-- scheduler reads; CreateDeployment used to store the bare labels, which the scheduler then
-- ignored. Wrap the rows written that way.
UPDATE deployments SET placement = '{"labels":' || placement || '}'
WHERE placement NOT LIKE '{"labels":{%';
